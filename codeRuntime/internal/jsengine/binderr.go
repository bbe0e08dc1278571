package jsengine

import (
	"maps"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Answer is the outcome of the binding call numbered Seq: its result, or what the program learns of
// its error. It is plain data, read once from the binding's values (see BindingError), so it is also
// what an isolated worker receives from its parent.
type Answer struct {
	Seq     uint64
	Result  []byte
	Err     bool // the call failed: Message, Code, Name, Details describe the error
	Message string
	Code    string
	Name    string
	Details map[string]string // nil when the error carried no ErrorDetails
}

// RemoteError is a binding error rebuilt from an Answer (in a worker process, from the parent's
// answer; in process, by ReadBindingError): it carries the original's message, code, name and
// details, which is all an engine reads of a binding error, and its methods never panic.
type RemoteError struct{ A Answer }

func (e *RemoteError) Error() string                   { return e.A.Message }
func (e *RemoteError) Code() string                    { return e.A.Code }
func (e *RemoteError) Name() string                    { return e.A.Name }
func (e *RemoteError) ErrorDetails() map[string]string { return e.A.Details }

// BindingError reads a binding's error into an Answer numbered seq, bounded and contained: the
// error's methods are the binding's code, so each is read under recover (safeerr), and one that
// panics leaves its field empty. This is the one mapping from a binding error to what the program
// sees, for every engine, in process and in a worker process.
func BindingError(seq uint64, err error) Answer {
	a := Answer{Seq: seq, Err: true, Message: safeerr.Text(err)}
	if c, ok := safeerr.As[interface{ Code() string }](err); ok {
		a.Code = callString(c.Code)
	}
	if n, ok := safeerr.As[interface{ Name() string }](err); ok {
		a.Name = callString(n.Name)
	}
	if d, ok := safeerr.As[coderuntime.ErrorDetails](err); ok {
		func() {
			defer func() {
				if recover() != nil {
					a.Details = map[string]string{}
				}
			}()
			a.Details = maps.Clone(d.ErrorDetails())
			if a.Details == nil {
				a.Details = map[string]string{}
			}
		}()
	}
	return a
}

// callString calls f under recover.
func callString(f func() string) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return f()
}
