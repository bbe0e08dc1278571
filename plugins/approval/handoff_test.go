package approval_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A Handoff gets each request with the call's context; its Respond is the
// service's decision: taken while the caller waits, refused (ErrWithdrawn)
// after the withdrawal, and the service never grants a withdrawn request.
func TestHandoff_RespondIsTheDecision(t *testing.T) {
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		got := make(chan *approval.Pending, 1)
		var seen any
		s := mustNew(t, approval.Config{Timeout: time.Minute, Answerer: approval.Handoff(func(ctx context.Context, p *approval.Pending) {
			seen = ctx.Value(key{})
			got <- p
		})}, nil)
		defer s.Close()
		ctx := context.WithValue(context.Background(), key{}, "the call's value")

		// Answered while the caller waits: taken.
		res := make(chan tools.ApprovalOutcome, 1)
		go func() {
			o, _ := s.Approve(ctx, req("c1", nil))
			res <- o
		}()
		p := <-got
		if seen != "the call's value" {
			t.Fatalf("the handoff's context lacks the call's values: %v", seen)
		}
		if err := p.Respond(tools.AllowedOnce); err != nil {
			t.Fatal(err)
		}
		if o := <-res; o != tools.AllowedOnce {
			t.Fatalf("outcome %q", o)
		}
		if err := p.Respond(tools.Rejected); !errors.Is(err, approval.ErrAnswered) {
			t.Fatalf("second answer: %v", err)
		}

		// Answered after the deadline: refused, nothing granted.
		go func() {
			o, _ := s.Approve(context.Background(), req("c2", nil))
			res <- o
		}()
		p = <-got
		time.Sleep(time.Minute)
		if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) || !errors.Is(err, approval.ErrTimeout) {
			t.Fatalf("late answer: %v", err)
		}
		if o := <-res; o != tools.Unavailable {
			t.Fatalf("outcome after the deadline %q", o)
		}
		<-p.Done()
	})
}
