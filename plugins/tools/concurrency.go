package tools

import (
	"fmt"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// Concurrency says whether one call may run alongside the other calls of
// its batch ([Registry.ExecuteBatch], or the sub-calls of one Code Mode
// run). The zero value is Exclusive.
//
// A Concurrency value is also the [ConcurrencyRule] that answers itself
// for every call, so a definition declares a fixed answer with
// Concurrency: tools.Parallel.
type Concurrency uint8

const (
	// Exclusive: the call is a barrier. Every call before it in the batch
	// finishes (its tools/result emitted) before the call's policy stages
	// start, and no later call starts until the call's tools/result was
	// emitted. Everything not explicitly declared Parallel is exclusive.
	Exclusive Concurrency = iota
	// Parallel: the call's tools/execute stage and body may overlap those
	// of neighbouring parallel calls (up to the batch's cap). Only a tool's
	// own rule can answer Parallel.
	Parallel
)

// String returns "exclusive" or "parallel" (or "Concurrency(n)" for a
// value that is neither).
func (c Concurrency) String() string {
	switch c {
	case Exclusive:
		return "exclusive"
	case Parallel:
		return "parallel"
	}
	return fmt.Sprintf("Concurrency(%d)", uint8(c))
}

// Concurrency implements [ConcurrencyRule]: a fixed answer, c, for every
// call.
func (c Concurrency) Concurrency(*Execution) (Concurrency, error) { return c, nil }

// ConcurrencyRule is a tool's declaration of which of its calls may run
// alongside others, as a function of the call: its frozen, validated
// arguments (exec.Arg, exec.Decode), agent and tool. A Concurrency value
// is a fixed rule; [ConcurrencyFunc] adapts a function.
//
// The registry asks the rule once per call, on the goroutine running the
// call, after the call's arguments passed validation and before any
// policy stage; Concurrency must be quick, pure and must not block. Only
// an answer of exactly [Parallel] with a nil error opts in: an error, a
// panic, or any other value makes the call [Exclusive] (the error or
// panic is logged).
type ConcurrencyRule interface {
	Concurrency(exec *Execution) (Concurrency, error)
}

// ConcurrencyFunc adapts a function to [ConcurrencyRule]: a rule that
// depends on the arguments ("a read-only git subcommand runs in
// parallel").
type ConcurrencyFunc func(exec *Execution) (Concurrency, error)

// Concurrency implements [ConcurrencyRule].
func (f ConcurrencyFunc) Concurrency(exec *Execution) (Concurrency, error) { return f(exec) }

var (
	_ ConcurrencyRule = Parallel
	_ ConcurrencyRule = ConcurrencyFunc(nil)
)

// The descriptions [DescribeConcurrency] returns.
const (
	ConcurrencyExclusive = "exclusive"
	ConcurrencyParallel  = "parallel"
	ConcurrencyPerCall   = "per call"
)

// DescribeConcurrency describes a declared rule for a catalog or a UI,
// without a call: "parallel" for the fixed rule [Parallel], "per call" for
// any other rule (the answer depends on the call's arguments), and
// "exclusive" for nil or the fixed rule [Exclusive].
func DescribeConcurrency(rule ConcurrencyRule) string {
	switch c := rule.(type) {
	case nil:
		return ConcurrencyExclusive
	case Concurrency:
		if c == Parallel {
			return ConcurrencyParallel
		}
		return ConcurrencyExclusive
	}
	return ConcurrencyPerCall
}

// checkConcurrencyRule reports a fixed rule that is neither Exclusive nor
// Parallel (a definition error).
func checkConcurrencyRule(rule ConcurrencyRule) error {
	if c, ok := rule.(Concurrency); ok && c != Exclusive && c != Parallel {
		return fmt.Errorf("concurrency %v is neither tools.Exclusive nor tools.Parallel", c)
	}
	return nil
}

// Concurrency reports how call would be scheduled in a batch, as the
// call's agent sees it: [Parallel] only when the tool resolved for
// call.Agent declares this call safe ([Definition].Concurrency), after
// the same input checks the pipeline makes (a valid call id, lossless
// arguments that pass the tool's validation); [Exclusive] for an unknown
// tool, a tool hidden from the agent by a restriction, a direct call that
// the mode refuses (under Code), the run_code transport, a tool without
// a rule, and a rule that answers anything else, errors or panics. It
// runs no policy and no body; it is safe for concurrent use.
//
// The pipeline asks the same question for each call of a batch (see
// [Registry.ExecuteBatch]); the answer can differ only when the registry
// changes in between.
func (r *Registry) Concurrency(call Call) Concurrency {
	exec := &Execution{}
	if _, ok := r.admit(exec, call); !ok {
		return Exclusive
	}
	return r.classify(exec)
}

// classify asks exec's tool's rule about exec (stages 1–2 passed).
func (r *Registry) classify(exec *Execution) Concurrency {
	t := exec.tool
	if t == nil || t.concurrency == nil {
		return Exclusive
	}
	if c, ok := t.concurrency.(Concurrency); ok {
		// A fixed rule answers itself, without a call to contain.
		if c != Parallel {
			return Exclusive
		}
		return Parallel
	}
	c, err := askRule(t.concurrency, exec)
	if err != nil {
		r.c.Logger().Warn().Str("tool", exec.name).Str("call", exec.callID).Str("error", err.Error()).
			Msg("the tool's concurrency rule failed; the call runs exclusive")
		return Exclusive
	}
	if c != Parallel {
		return Exclusive
	}
	return Parallel
}

// askRule calls rule under containment: a panic, or an error whose
// message cannot be read, is an error.
func askRule(rule ConcurrencyRule, exec *Execution) (c Concurrency, err error) {
	defer func() {
		if v := recover(); v != nil {
			c, err = Exclusive, fmt.Errorf("%s", panicMessage("the concurrency rule", v))
		}
	}()
	c, err = rule.Concurrency(exec)
	if err != nil {
		return Exclusive, fmt.Errorf("%s", safeerr.Text(err))
	}
	return c, nil
}
