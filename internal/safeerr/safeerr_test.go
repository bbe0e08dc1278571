package safeerr_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// cyclic wraps itself and counts its Unwrap calls.
type cyclic struct{ n *int }

func (c cyclic) Error() string { return "cyclic" }
func (c cyclic) Unwrap() error { *c.n++; return c }

type panicky struct{}

func (panicky) Error() string          { panic("Error exploded") }
func (panicky) Is(error) bool          { panic("Is exploded") }
func (panicky) As(any) bool            { panic("As exploded") }
func (panicky) String() string         { panic("String exploded") }
func (panicky) Unwrap() []error        { return []error{io.EOF} }
func (panicky) Format(fmt.State, rune) { panic("Format exploded") }

type coded struct{ code string }

func (c *coded) Error() string { return c.code }

func TestCyclicChainsAreCut(t *testing.T) {
	c := cyclic{n: new(int)}
	if safeerr.Is(c, io.EOF) {
		t.Error("Is found io.EOF in a chain without it")
	}
	if _, ok := safeerr.As[*coded](c); ok {
		t.Error("As found a *coded in a chain without one")
	}
	var target *coded
	if safeerr.AsAny(c, &target) {
		t.Error("AsAny found a *coded in a chain without one")
	}
	if *c.n > 3*safeerr.MaxChain {
		t.Errorf("Unwrap called %d times for three bounded walks", *c.n)
	}
}

func TestPanickingMethodsAreContained(t *testing.T) {
	if got := safeerr.Text(panicky{}); !strings.Contains(got, "Error method panicked: Error exploded") {
		t.Errorf("Text = %q", got)
	}
	if got := safeerr.Sprint(panicky{}); !strings.Contains(got, "exploded") {
		t.Errorf("Sprint = %q", got)
	}
	if safeerr.Is(panicky{}, io.EOF) {
		t.Error("Is: a panicking Is method counts as no match")
	}
	var target *coded
	if safeerr.AsAny(panicky{}, &target) {
		t.Error("AsAny: a panicking As method counts as no match")
	}
	if safeerr.AsAny(io.EOF, nil) || safeerr.AsAny(io.EOF, target) {
		t.Error("AsAny accepted a nil target")
	}
}

func TestMatchesLikeTheStandardLibrary(t *testing.T) {
	want := &coded{code: "X"}
	err := fmt.Errorf("outer: %w", errors.Join(io.ErrUnexpectedEOF, fmt.Errorf("mid: %w", want)))
	if !safeerr.Is(err, io.ErrUnexpectedEOF) || safeerr.Is(err, io.EOF) {
		t.Error("Is disagrees with errors.Is")
	}
	if got, ok := safeerr.As[*coded](err); !ok || got != want {
		t.Errorf("As = %v, %v", got, ok)
	}
	var target *coded
	if !safeerr.AsAny(err, &target) || target != want {
		t.Errorf("AsAny = %v", target)
	}
	if safeerr.Text(err) != err.Error() {
		t.Errorf("Text = %q", safeerr.Text(err))
	}
	if got := safeerr.Text(errors.New("bad \xff byte")); got != "bad \uFFFD byte" {
		t.Errorf("Text = %q, want valid UTF-8", got)
	}
}
