package isolated

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// runRequest is the frameRun body: the program, without its bindings' functions.
type runRequest struct {
	Source    string
	Namespace string
	Names     []string      // the binding names
	Timeout   time.Duration // the run's wall-clock budget, from the parent's view (> 0)
	JS        string        // Source transformed by the parent (jsengine.WrapProgram), or ""
}

func (m runRequest) encode() []byte {
	var e enc
	e.string(m.Source)
	e.string(m.Namespace)
	e.uint(uint64(len(m.Names)))
	for _, n := range m.Names {
		e.string(n)
	}
	e.uint(uint64(m.Timeout))
	e.string(m.JS)
	return e.b
}

func decodeRunRequest(b []byte) (m runRequest, err error) {
	d := dec{b: b}
	m.Source = d.string()
	m.Namespace = d.string()
	n := d.int(len(b))
	for i := 0; i < n && d.err == nil; i++ {
		m.Names = append(m.Names, d.string())
	}
	m.Timeout = time.Duration(d.int(math.MaxInt64))
	m.JS = d.string()
	return m, d.end()
}

// encodeAnswer is the frameAnswer body of m: the outcome of the binding call numbered m.Seq (the
// worker's number).
func encodeAnswer(m jsengine.Answer) []byte { return appendAnswer(nil, m) }

// appendAnswer appends the frameAnswer body of m to b.
func appendAnswer(b []byte, m jsengine.Answer) []byte {
	e := enc{b: b}
	e.uint(m.Seq)
	if !m.Err {
		e.uint(0)
		e.bytes(m.Result)
		return e.b
	}
	e.uint(1)
	e.string(m.Message)
	e.string(m.Code)
	e.string(m.Name)
	if m.Details == nil {
		e.uint(0)
		return e.b
	}
	e.uint(1)
	e.uint(uint64(len(m.Details)))
	for k, v := range m.Details {
		e.string(k)
		e.string(v)
	}
	return e.b
}

func decodeAnswer(b []byte) (m jsengine.Answer, err error) {
	d := dec{b: b}
	m.Seq = d.uint()
	switch d.int(1) {
	case 0:
		m.Result = d.bytes()
	case 1:
		m.Err = true
		m.Message, m.Code, m.Name = d.string(), d.string(), d.string()
		if d.int(1) == 1 {
			n := d.int(len(b))
			m.Details = make(map[string]string, min(n, 64))
			for i := 0; i < n && d.err == nil; i++ {
				k := d.string()
				m.Details[k] = d.string()
			}
		}
	}
	return m, d.end()
}

// callFrame is the frameCall body.
type callFrame struct {
	Seq  uint64
	Name string
	Args []byte
}

func (m callFrame) encode() []byte {
	var e enc
	e.uint(m.Seq)
	e.string(m.Name)
	e.bytes(m.Args)
	return e.b
}

func decodeCall(b []byte) (m callFrame, err error) {
	d := dec{b: b}
	m.Seq = d.uint()
	m.Name = d.string()
	m.Args = d.bytes()
	return m, d.end()
}

// The causes a frameCancel carries and an outcome's failure may name.
const (
	causeNone = iota
	causeDeadline
	causeCanceled
	causeCPU
	causeHeap
	causeOutput
	causeStack
	causeMemory
	causeOther
)

var causeErrors = map[int]error{
	causeDeadline: context.DeadlineExceeded,
	causeCanceled: context.Canceled,
	causeCPU:      coderuntime.ErrCPUBudget,
	causeHeap:     coderuntime.ErrHeapLimit,
	causeOutput:   coderuntime.ErrOutputLimit,
	causeStack:    coderuntime.ErrStackDepth,
	causeMemory:   ErrMemoryLimit,
}

// causeCode maps a Failure's cause to its wire code (causeOther with its text for anything else).
func causeCode(err error) int {
	if err == nil {
		return causeNone
	}
	// ErrCPUBudget matches DeadlineExceeded too: test it first.
	for _, c := range []int{causeCPU, causeDeadline, causeCanceled, causeHeap, causeOutput, causeStack, causeMemory} {
		if safeerr.Is(err, causeErrors[c]) {
			return c
		}
	}
	return causeOther
}

// outcome is the frameDone body: how the run ended in the worker.
type outcome struct {
	Status  int // outcomeResult, outcomeFailure, outcomeInvalid
	Value   []byte
	Logs    []coderuntime.Log
	Failure coderuntime.Failure // Kind, Message, Line, Column; Cause rebuilt from CauseCode (and CauseText)
	// CauseCode and CauseText carry Failure.Cause.
	CauseCode int
	CauseText string
	Invalid   string // the message of an ErrInvalidProgram error
}

const (
	outcomeResult = iota
	outcomeFailure
	outcomeInvalid
)

// failureKinds are the kinds an outcome may carry.
var failureKinds = []coderuntime.FailureKind{coderuntime.KindSyntax, coderuntime.KindException, coderuntime.KindTimeout, coderuntime.KindAbort, coderuntime.KindOutputLimit, coderuntime.KindInvalidOutput, coderuntime.KindLimit, coderuntime.KindCrash}

// logLevelNames are the log levels an outcome may carry.
var logLevelNames = []string{"log", "info", "warn", "error", "debug"}

func (m outcome) encode() []byte {
	var e enc
	e.uint(uint64(m.Status))
	switch m.Status {
	case outcomeResult:
		e.bytes(m.Value)
	case outcomeFailure:
		e.string(string(m.Failure.Kind))
		e.string(m.Failure.Message)
		e.uint(uint64(max(m.Failure.Line, 0)))
		e.uint(uint64(max(m.Failure.Column, 0)))
		e.uint(uint64(m.CauseCode))
		e.string(m.CauseText)
	case outcomeInvalid:
		e.string(m.Invalid)
		return e.b
	}
	e.uint(uint64(len(m.Logs)))
	for _, l := range m.Logs {
		e.string(l.Level)
		e.string(l.Text)
	}
	return e.b
}

func decodeOutcome(b []byte) (m outcome, err error) {
	d := dec{b: b}
	m.Status = d.int(outcomeInvalid)
	switch m.Status {
	case outcomeResult:
		m.Value = d.bytes()
	case outcomeFailure:
		m.Failure.Kind = coderuntime.FailureKind(d.string())
		m.Failure.Message = d.string()
		m.Failure.Line = d.int(math.MaxInt32)
		m.Failure.Column = d.int(math.MaxInt32)
		m.CauseCode = d.int(causeOther)
		m.CauseText = d.string()
		if d.err == nil && !slices.Contains(failureKinds, m.Failure.Kind) {
			d.fail(fmt.Sprintf("unknown failure kind %q", m.Failure.Kind))
		}
	case outcomeInvalid:
		m.Invalid = d.string()
		return m, d.end()
	}
	n := d.int(len(b))
	for i := 0; i < n && d.err == nil; i++ {
		l := coderuntime.Log{Level: d.string(), Text: d.string()}
		if d.err == nil && !slices.Contains(logLevelNames, l.Level) {
			d.fail(fmt.Sprintf("unknown log level %q", l.Level))
		}
		m.Logs = append(m.Logs, l)
	}
	return m, d.end()
}

// settleCauseCode is the wire code of the bindings' cancellation cause: the run's deadline,
// its cancellation, or (anything else) ErrRunSettled.
func settleCauseCode(err error) int {
	switch {
	case safeerr.Is(err, coderuntime.ErrCPUBudget):
	case safeerr.Is(err, context.DeadlineExceeded):
		return causeDeadline
	case safeerr.Is(err, context.Canceled):
		return causeCanceled
	}
	return causeNone
}

// settleCause is the bindings' cancellation cause of a settlement wire code.
func settleCause(code int) error {
	switch code {
	case causeDeadline:
		return context.DeadlineExceeded
	case causeCanceled:
		return context.Canceled
	}
	return coderuntime.ErrRunSettled
}

// causeError rebuilds a Failure's cause.
func causeError(code int, text string) error {
	if err, ok := causeErrors[code]; ok {
		return err
	}
	if code == causeOther {
		return errors.New(text)
	}
	return nil
}
