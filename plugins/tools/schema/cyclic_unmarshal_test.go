package schema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// cyclicErr is an error whose Unwrap returns itself.
type cyclicErr struct{}

func (cyclicErr) Error() string   { return "cyclic unmarshal error" }
func (e cyclicErr) Unwrap() error { return e }

// cyclicArg is a tool argument type whose own unmarshaler fails with a
// cyclic error.
type cyclicArg struct{}

func (*cyclicArg) UnmarshalJSON([]byte) error { return cyclicErr{} }

type cyclicArgs struct {
	X cyclicArg `json:"x"`
}

// Defect: Decode read the decoder's error (the type's own unmarshaler's)
// with errors.As, unbounded: a cyclic one hung the call's validation. It
// is now a violation carrying the unmarshaler's message.
func TestDecodeCyclicUnmarshalerErrorIsAViolation(t *testing.T) {
	done := make(chan []schema.Violation, 1)
	go func() {
		var v cyclicArgs
		done <- schema.TargetFor[cyclicArgs]().Decode([]byte(`{"x":1}`), &v)
	}()
	select {
	case vs := <-done:
		if len(vs) != 1 || !strings.Contains(vs[0].Message, "cyclic unmarshal error") {
			t.Fatalf("violations %+v, want one with the unmarshaler's message", vs)
		}
	case <-time.After(time.Minute): // a safety net: a passing Decode takes microseconds
		t.Fatal("Decode did not return: an unbounded walk of the unmarshaler's cyclic error?")
	}
}
