package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that took its session just before closeConn's sweep of the calls
// in flight (so the sweep missed it) still ends with the session's close:
// it sees the session's context done and fails as ServerUnavailable,
// "closed during the call", instead of running on a session being closed
// (whose Close would wait for it).
func TestACallRacingItsSessionsCloseIsCancelled(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); _ = ss.Wait() }()

	s := &server{cfg: Config{Name: "mem"}}
	cur := &conn{cs: cs, ended: make(chan struct{})}
	cur.ctx, cur.cancel = context.WithCancelCause(ctx)
	s.conn.Store(cur)
	cur.cancel(errSessionClosed) // closeConn began: its sweep found no call

	exec, err := tools.NewExecution(tools.Call{ID: "c1", Name: "mcp__mem__echo", Arguments: json.RawMessage(`{}`)}, tools.Definition{Name: "mcp__mem__echo", Description: "echo",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.call(ctx, exec, &remote{name: "echo"})
	if err == nil || !strings.Contains(err.Error(), "the session was closed during the call") {
		t.Fatalf("call on a closing session = %+v, %v", out, err)
	}
	if s.inflight.head != nil {
		t.Fatal("a call was left in flight")
	}
}

// A call whose caller's context can never be cancelled has no context of
// its own: it is the session's context with the caller's values. Its
// cancellation is the session's, with the session's cause, and a context
// derived from it is cancelled with the session, at once (it is the
// session context's child, not a goroutine's watch).
func TestACallWithoutAContextOfItsOwnIsTheSessionsWithTheCallersValues(t *testing.T) {
	type key struct{}
	cur := &conn{}
	cur.ctx, cur.cancel = context.WithCancelCause(context.Background())
	in := &inflight{parent: context.WithValue(context.Background(), key{}, "v"), cur: cur}
	if in.Value(inflightKey{}) != in || in.Value(key{}) != "v" || in.Value("other") != nil {
		t.Fatalf("values: %v %v %v", in.Value(inflightKey{}), in.Value(key{}), in.Value("other"))
	}
	if _, ok := in.Deadline(); ok || in.Err() != nil || in.Done() != cur.ctx.Done() {
		t.Fatalf("a running call: deadline %v, err %v", ok, in.Err())
	}
	child, cancel := context.WithCancel(in)
	defer cancel()
	cur.cancel(errSessionClosed)
	if in.Err() != context.Canceled || context.Cause(in) != errSessionClosed {
		t.Fatalf("after the session's close: err %v, cause %v", in.Err(), context.Cause(in))
	}
	if child.Err() != context.Canceled || context.Cause(child) != errSessionClosed {
		t.Fatalf("derived context after the session's close: err %v, cause %v", child.Err(), context.Cause(child))
	}
	in.stop(errCallTimeout) // nothing of its own to cancel
	if context.Cause(in) != errSessionClosed {
		t.Fatalf("cause after stop: %v", context.Cause(in))
	}
}

// A call whose caller's context can be cancelled has its own, derived
// from the caller's: the caller's values and deadline, its own cause.
func TestACallWithAContextOfItsOwnKeepsTheCallersValuesAndDeadline(t *testing.T) {
	type key struct{}
	cur := &conn{}
	cur.ctx, cur.cancel = context.WithCancelCause(context.Background())
	defer cur.cancel(nil)
	deadline := time.Unix(1<<40, 0)
	parent, cancelParent := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
	defer cancelParent()
	in := &inflight{parent: parent, cur: cur}
	in.own, in.cancel = context.WithCancelCause(parent)
	if in.Value(inflightKey{}) != in || in.Value(key{}) != "v" {
		t.Fatalf("values: %v %v", in.Value(inflightKey{}), in.Value(key{}))
	}
	if d, ok := in.Deadline(); !ok || !d.Equal(deadline) || in.Err() != nil {
		t.Fatalf("a running call: deadline %v %v, err %v", d, ok, in.Err())
	}
	in.stop(errSessionClosed)
	if in.Err() != context.Canceled || context.Cause(in) != errSessionClosed || cur.ctx.Err() != nil {
		t.Fatalf("after stop: err %v, cause %v, session %v", in.Err(), context.Cause(in), cur.ctx.Err())
	}
}

// The calls in flight are a list linked through the calls: each is in it
// from add to remove, wherever it is in the list, and all yields each
// call in it once.
func TestInflightListAddsAndRemovesAnywhere(t *testing.T) {
	var l inflightList
	calls := make([]*inflight, 5)
	for i := range calls {
		calls[i] = &inflight{}
		l.add(calls[i])
	}
	members := func() map[*inflight]bool {
		got := map[*inflight]bool{}
		for in := range l.all {
			if got[in] {
				t.Fatal("a call yielded twice")
			}
			got[in] = true
		}
		return got
	}
	for _, i := range []int{2, 4, 0, 3, 1} { // middle, first, last, ...
		l.remove(calls[i])
		if calls[i].prev != nil || calls[i].next != nil {
			t.Fatal("a removed call keeps its links")
		}
		got := members()
		if got[calls[i]] {
			t.Fatalf("call %d still in the list", i)
		}
		left := 0
		for _, in := range calls {
			if in.prev != nil || in.next != nil || l.head == in {
				left++
				if !got[in] {
					t.Fatal("a call still linked is not yielded")
				}
			}
		}
		if left != len(got) {
			t.Fatalf("%d calls linked, %d yielded", left, len(got))
		}
	}
	if l.head != nil {
		t.Fatal("the list is not empty")
	}
	// Stopping the loop early stops the walk.
	l.add(calls[0])
	l.add(calls[1])
	n := 0
	for range l.all {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("walked %d after break", n)
	}
}
