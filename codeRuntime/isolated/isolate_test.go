package isolated

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
)

// isoConfig is the configuration of the isolated tests: budgets far above what a passing run
// needs.
func isoConfig() coderuntime.Config {
	return coderuntime.Config{Timeout: time.Minute, CPUBudget: time.Minute, PoolSize: 1}
}

func newIsolatedT(t *testing.T, cfg coderuntime.Config) *Runtime {
	t.Helper()
	iso, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iso.Close() })
	return iso
}

// stubbed returns an Isolated whose workers misbehave as mode says (see stubWorker).
func stubbed(t *testing.T, mode string, cfg coderuntime.Config) *Runtime {
	t.Helper()
	t.Setenv(stubEnv, mode)
	iso := newIsolatedT(t, cfg)
	iso.killGrace = 50 * time.Millisecond
	return iso
}

// busyPid returns the pid of the worker running a program (there must be one).
func busyPid(iso *Runtime) int {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	for w := range iso.busy {
		return w.pid
	}
	panic("no busy worker")
}

func wantFailure(t *testing.T, err error, kind coderuntime.FailureKind, cause error) *coderuntime.Failure {
	t.Helper()
	var f *coderuntime.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T), want a *Failure of kind %s", err, err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("kind %s (%v), want %s", f.Kind, f, kind)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Fatalf("failure %v (cause %v) does not match %v", f, f.Cause, cause)
	}
	return f
}

func constBinding(v string) coderuntime.Binding {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(v), nil }
}

// healthy checks that iso still runs programs.
func healthy(t *testing.T, iso *Runtime) {
	t.Helper()
	res, err := iso.Run(context.Background(), coderuntime.Program{Source: "return await tools.one() + 1", Bindings: map[string]coderuntime.Binding{"one": constBinding("1")}})
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("the next run: %+v, %v", res, err)
	}
}

func TestIsolatedRunsAProgram(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source: "const r = await tools.add({a: 2, b: 3}); console.log('sum', r.sum); return r.sum * 2",
		Bindings: map[string]coderuntime.Binding{"add": func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]int{"sum": in.A + in.B})
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != "10" || len(res.Logs) != 1 || res.Logs[0].Text != "sum 5" {
		t.Fatalf("result %s, logs %+v", res.Value, res.Logs)
	}
}

// The engine's own failures come back whole: kind, message, position, logs and cause.
func TestIsolatedEngineFailuresPassThrough(t *testing.T) {
	cfg := isoConfig()
	cfg.CPUBudget = time.Second // the passing programs here use a few milliseconds of CPU
	cfg.MaxLogBytes = 1000
	iso := newIsolatedT(t, cfg)
	ctx := context.Background()

	_, err := iso.Run(ctx, coderuntime.Program{Source: "console.log('before')\n\nthrow new TypeError('boom')"})
	f := wantFailure(t, err, coderuntime.KindException, nil)
	if !strings.Contains(f.Message, "TypeError: boom") || f.Line != 3 || len(f.Logs) != 1 || f.Logs[0].Text != "before" {
		t.Errorf("exception %+v", f)
	}
	_, err = iso.Run(ctx, coderuntime.Program{Source: "let x = ;"})
	wantFailure(t, err, coderuntime.KindSyntax, nil)
	_, err = iso.Run(ctx, coderuntime.Program{Source: "while (true) {}"})
	wantFailure(t, err, coderuntime.KindTimeout, coderuntime.ErrCPUBudget)
	_, err = iso.Run(ctx, coderuntime.Program{Source: "for (;;) console.log('spam')"})
	wantFailure(t, err, coderuntime.KindOutputLimit, coderuntime.ErrOutputLimit)
	_, err = iso.Run(ctx, coderuntime.Program{Source: "function f() { return f() + 1 }; return f()"})
	wantFailure(t, err, coderuntime.KindLimit, coderuntime.ErrStackDepth)

	// An invalid program is an error, not a Failure, as in process.
	_, err = iso.Run(ctx, coderuntime.Program{Source: "return 1", Namespace: "JSON"})
	var fail *coderuntime.Failure
	if !errors.Is(err, coderuntime.ErrInvalidProgram) || errors.As(err, &fail) {
		t.Errorf("namespace JSON: %v, want ErrInvalidProgram", err)
	}
	_, err = iso.Run(ctx, coderuntime.Program{Source: "return 1", Bindings: map[string]coderuntime.Binding{"x": nil}})
	if !errors.Is(err, coderuntime.ErrInvalidProgram) {
		t.Errorf("nil binding: %v, want ErrInvalidProgram", err)
	}
	healthy(t, iso)
}

// Binding errors reach the program as in process: message, code, name and details.
func TestIsolatedBindingErrors(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source: `const out = []
for (const name of ["coded", "panics"]) {
	try { await tools[name]({}) } catch (e) { out.push([e.message, e.code ?? null, e.name, e.tool ?? null]) }
}
return out`,
		Bindings: map[string]coderuntime.Binding{
			"coded":  func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, isoDetailedErr{} },
			"panics": func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("oops") },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `[["it failed","E_CODED","CodedError","the-tool"],["binding \"panics\" panicked: oops",null,"Error",null]]`
	if string(res.Value) != want {
		t.Errorf("got  %s\nwant %s", res.Value, want)
	}
}

type isoDetailedErr struct{}

func (isoDetailedErr) Error() string                   { return "it failed" }
func (isoDetailedErr) Code() string                    { return "E_CODED" }
func (isoDetailedErr) Name() string                    { return "CodedError" }
func (isoDetailedErr) ErrorDetails() map[string]string { return map[string]string{"tool": "the-tool"} }

// Calls are numbered in submission order, at most MaxConcurrentCalls run at once, calls in
// flight when the program settles are cancelled (cause ErrRunSettled), and calls still queued are
// delivered afterwards, in order, with the cancelled context, before Run returns.
func TestIsolatedBindingSettlement(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	var mu sync.Mutex
	type seen struct {
		name      string
		seq       uint64
		cancelled bool
	}
	var calls []seen
	returned := 0
	var blockCause error
	b := func(name string) coderuntime.Binding {
		return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			n, _ := coderuntime.CallSeq(ctx)
			mu.Lock()
			calls = append(calls, seen{name, n, ctx.Err() != nil})
			mu.Unlock()
			if name != "ready" {
				<-ctx.Done() // the program returns without awaiting it: settlement cancels it
				if n == 1 {
					blockCause = context.Cause(ctx)
				}
			}
			mu.Lock()
			returned++
			mu.Unlock()
			return args, nil
		}
	}
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source:             "tools.block(); await tools.ready(); tools.f(3); tools.f(4); return 'early'",
		Bindings:           map[string]coderuntime.Binding{"block": b("block"), "ready": b("ready"), "f": b("f")},
		MaxConcurrentCalls: 2,
	})
	if err != nil || string(res.Value) != `"early"` {
		t.Fatalf("Run = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if returned != 4 || len(calls) != 4 {
		t.Fatalf("%d calls, %d returned before Run returned: %+v", len(calls), returned, calls)
	}
	bySeq := map[uint64]seen{}
	for _, c := range calls {
		bySeq[c.seq] = c
	}
	for i, name := range []string{"block", "ready", "f", "f"} {
		if c := bySeq[uint64(i+1)]; c.name != name {
			t.Errorf("CallSeq %d went to %q, want %q (calls %+v)", i+1, c.name, name, calls)
		}
	}
	if bySeq[1].cancelled || bySeq[2].cancelled {
		t.Errorf("calls made before settlement started cancelled: %+v", calls)
	}
	if !bySeq[4].cancelled {
		t.Error("the call queued at settlement was delivered with a live context")
	}
	if calls[len(calls)-1].seq != 4 {
		t.Errorf("the queued call was not delivered last: %+v", calls)
	}
	if !errors.Is(blockCause, coderuntime.ErrRunSettled) {
		t.Errorf("the call in flight ended with %v, want ErrRunSettled", blockCause)
	}
}

// Concurrent calls run at once up to the limit and are numbered in submission order.
func TestIsolatedConcurrentCalls(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	var mu sync.Mutex
	inFlight, peak := 0, 0
	gate := make(chan struct{})
	var open sync.Once
	var seqs []uint64
	b := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		n, _ := coderuntime.CallSeq(ctx)
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		seqs = append(seqs, n)
		if inFlight == 3 {
			open.Do(func() { close(gate) })
		}
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return args, nil
	}
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source:             "return (await Promise.all([1,2,3,4,5,6].map(i => tools.f(i)))).join(',')",
		Bindings:           map[string]coderuntime.Binding{"f": b},
		MaxConcurrentCalls: 3,
	})
	if err != nil || string(res.Value) != `"1,2,3,4,5,6"` {
		t.Fatalf("Run = %v, %v", res, err)
	}
	if peak != 3 {
		t.Errorf("peak concurrency %d, want 3", peak)
	}
	want := map[uint64]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true}
	for _, n := range seqs {
		delete(want, n)
	}
	if len(want) != 0 {
		t.Errorf("CallSeq numbers %v", seqs)
	}
}

// A binding argument over MaxMessageBytes rejects that call in the program, without reaching
// the host; numbering stays consecutive.
func TestIsolatedOversizeArgumentRejectsTheCall(t *testing.T) {
	cfg := isoConfig()
	cfg.MaxMessageBytes = 1000
	iso := newIsolatedT(t, cfg)
	var got []string
	b := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		n, _ := coderuntime.CallSeq(ctx)
		got = append(got, fmt.Sprintf("%d:%d", n, len(args)))
		return nil, nil
	}
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source:   "let code; try { await tools.f('x'.repeat(2000)) } catch (e) { code = e.code + ' ' + e.name } await tools.f('small'); return code",
		Bindings: map[string]coderuntime.Binding{"f": b},
	})
	if err != nil || string(res.Value) != `"MESSAGE_TOO_LARGE RangeError"` {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if len(got) != 1 || got[0] != "1:7" {
		t.Errorf("the binding saw %v, want only the small call, numbered 1", got)
	}
}

// A worker killed from outside mid-run ends the run as a crash; the pool and the next run are fine.
func TestIsolatedWorkerKilledMidRunIsACrash(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	var cause error
	_, err := iso.Run(context.Background(), coderuntime.Program{
		Source: "await tools.killMe(); return 1",
		Bindings: map[string]coderuntime.Binding{"killMe": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if err := syscall.Kill(busyPid(iso), syscall.SIGKILL); err != nil {
				return nil, err
			}
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil, nil
		}},
	})
	f := wantFailure(t, err, coderuntime.KindCrash, ErrWorkerCrashed)
	if !strings.Contains(f.Message, "killed") {
		t.Errorf("message %q does not say the worker was killed", f.Message)
	}
	if !errors.Is(cause, coderuntime.ErrRunSettled) {
		t.Errorf("the binding's context ended with %v, want ErrRunSettled", cause)
	}
	healthy(t, iso)
}

// Every way a worker can break the protocol ends its run as a crash (or output-limit for an
// oversized message) and harms nothing else.
func TestIsolatedProtocolBreaksAreCrashes(t *testing.T) {
	cases := []struct {
		mode  string
		kind  coderuntime.FailureKind
		cause error
		text  string
	}{
		{"junk", coderuntime.KindCrash, errProtocol, "protocol"},
		{"bad-call", coderuntime.KindCrash, errProtocol, "protocol"},
		{"unknown-binding", coderuntime.KindCrash, errProtocol, "not a binding"},
		{"seq-backwards", coderuntime.KindCrash, errProtocol, "call number"},
		{"bad-args", coderuntime.KindCrash, errProtocol, "not JSON"},
		{"bad-kind", coderuntime.KindCrash, errProtocol, "unknown failure kind"},
		{"big-value", coderuntime.KindCrash, errProtocol, "result value"},
		{"oversize", coderuntime.KindOutputLimit, coderuntime.ErrOutputLimit, "over the limit"},
		{"exit", coderuntime.KindCrash, ErrWorkerCrashed, "exit status 7"},
		{"panic", coderuntime.KindCrash, ErrWorkerCrashed, "the worker blew up"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := isoConfig()
			cfg.MaxResultBytes = 10
			iso := stubbed(t, tc.mode, cfg)
			_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1", Bindings: map[string]coderuntime.Binding{"f": constBinding("1")}})
			f := wantFailure(t, err, tc.kind, tc.cause)
			if !strings.Contains(f.Message, tc.text) {
				t.Errorf("message %q does not contain %q", f.Message, tc.text)
			}
		})
	}
}

// A worker that does not say hello properly never runs a program: the run fails as a crash.
func TestIsolatedBadHelloIsACrash(t *testing.T) {
	iso := stubbed(t, "bad-hello", isoConfig())
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	f := wantFailure(t, err, coderuntime.KindCrash, ErrWorkerCrashed)
	if !strings.Contains(f.Message, "did not start") {
		t.Errorf("message %q", f.Message)
	}
}

// The parent kills a worker that overruns the wall clock, even one that ignores everything.
func TestIsolatedWallClockKill(t *testing.T) {
	cfg := isoConfig()
	cfg.Timeout = 100 * time.Millisecond
	iso := stubbed(t, "hang", cfg)
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	wantFailure(t, err, coderuntime.KindTimeout, context.DeadlineExceeded)
}

// Endless output on the worker's stderr costs the host a bounded buffer; the run ends at its
// wall clock.
func TestIsolatedEndlessStderrIsBounded(t *testing.T) {
	cfg := isoConfig()
	cfg.Timeout = 200 * time.Millisecond
	iso := stubbed(t, "spew", cfg)
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	wantFailure(t, err, coderuntime.KindTimeout, context.DeadlineExceeded)
}

// The parent kills a worker whose CPU time passes the budget and its margin, where no engine
// interrupt reaches.
func TestIsolatedCPUKill(t *testing.T) {
	if !procSampling {
		t.Skip("no CPU sampling on this platform")
	}
	cfg := isoConfig()
	cfg.CPUBudget = 10 * time.Millisecond
	iso := stubbed(t, "spin", cfg)
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	f := wantFailure(t, err, coderuntime.KindTimeout, coderuntime.ErrCPUBudget)
	if !strings.Contains(f.Message, "CPU time") {
		t.Errorf("message %q", f.Message)
	}
}

// The parent kills a worker whose resident memory passes MaxMemoryBytes.
func TestIsolatedMemoryKill(t *testing.T) {
	if !procSampling {
		t.Skip("no memory sampling on this platform")
	}
	cfg := isoConfig()
	cfg.MaxMemoryBytes = 256 << 20
	iso := stubbed(t, "eat", cfg)
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	wantFailure(t, err, coderuntime.KindLimit, ErrMemoryLimit)
}

// A program that allocates without bound ends with kind limit (the worker's heap watchdog or the
// parent's resident-memory kill, whichever sees it first); the host is unharmed.
func TestIsolatedMemoryBombIsALimit(t *testing.T) {
	cfg := isoConfig()
	cfg.MaxMemoryBytes = 128 << 20
	cfg.Timeout, cfg.CPUBudget = time.Hour, time.Hour // memory decides, however slow the machine
	iso := newIsolatedT(t, cfg)
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1 << 16) + i)"})
	f := wantFailure(t, err, coderuntime.KindLimit, nil)
	if !errors.Is(f, ErrMemoryLimit) && !errors.Is(f, coderuntime.ErrHeapLimit) {
		t.Errorf("cause %v, want ErrMemoryLimit or ErrHeapLimit", f.Cause)
	}
	healthy(t, iso)
}

// Cancelling the run's context interrupts the program in the worker: kind abort, logs kept.
func TestIsolatedCancel(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	ctx, cancel := context.WithCancel(context.Background())
	_, err := iso.Run(ctx, coderuntime.Program{
		Source: "console.log('started'); await tools.started(); for (;;) {}",
		Bindings: map[string]coderuntime.Binding{"started": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			cancel()
			return nil, nil
		}},
	})
	f := wantFailure(t, err, coderuntime.KindAbort, context.Canceled)
	if len(f.Logs) != 1 {
		t.Errorf("logs %+v, want the one before the cancellation", f.Logs)
	}
	healthy(t, iso)
}

// A run that times out while a binding is in flight fails with kind timeout and its logs; the
// binding's context ends with context.DeadlineExceeded, as in process.
func TestIsolatedTimeoutCancelsBindingsWithTheDeadline(t *testing.T) {
	t.Parallel() // it waits out a 5s budget: other parallel tests run meanwhile
	cfg := isoConfig()
	// The program reaches the binding in milliseconds; the budget is far above that on a loaded
	// machine, and the binding blocks until the deadline whatever it is.
	cfg.Timeout = 5 * time.Second
	iso := newIsolatedT(t, cfg)
	var cause error
	_, err := iso.Run(context.Background(), coderuntime.Program{
		Source: "console.log('before'); await tools.block(); console.log('never')",
		Bindings: map[string]coderuntime.Binding{"block": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil, nil
		}},
	})
	f := wantFailure(t, err, coderuntime.KindTimeout, context.DeadlineExceeded)
	if len(f.Logs) != 1 || f.Logs[0].Text != "before" {
		t.Errorf("logs %+v", f.Logs)
	}
	if !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("the binding's context ended with %v, want context.DeadlineExceeded", cause)
	}
}

// A worker that ignores the cancellation is killed after the grace period.
func TestIsolatedCancelIgnoredIsKilled(t *testing.T) {
	iso := stubbed(t, "hang", isoConfig())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Already cancelled: Run does not even start.
	_, err := iso.Run(ctx, coderuntime.Program{Source: "return 1"})
	wantFailure(t, err, coderuntime.KindAbort, context.Canceled)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := iso.Run(ctx, coderuntime.Program{Source: "return 1"})
		done <- err
	}()
	waitBusy(iso)
	cancel()
	wantFailure(t, <-done, coderuntime.KindAbort, context.Canceled)
}

// waitBusy blocks until a run holds a worker.
func waitBusy(iso *Runtime) {
	for {
		iso.mu.Lock()
		n, changed := len(iso.busy), iso.changed
		iso.mu.Unlock()
		if n > 0 {
			return
		}
		<-changed
	}
}

// Closing the runtime mid-run ends the run as an abort caused by ErrClosed, cancels its bindings,
// and kills every worker; later runs fail the same way.
func TestIsolatedCloseMidRun(t *testing.T) {
	iso, err := New(isoConfig())
	if err != nil {
		t.Fatal(err)
	}
	inBinding := make(chan struct{})
	done := make(chan error, 1)
	var cause error
	go func() {
		_, err := iso.Run(context.Background(), coderuntime.Program{
			Source: "await tools.block()",
			Bindings: map[string]coderuntime.Binding{"block": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				close(inBinding)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return nil, nil
			}},
		})
		done <- err
	}()
	<-inBinding
	if err := iso.Close(); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, <-done, coderuntime.KindAbort, ErrClosed)
	if !errors.Is(cause, ErrClosed) {
		t.Errorf("the binding's context ended with %v, want ErrClosed", cause)
	}
	_, err = iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	wantFailure(t, err, coderuntime.KindAbort, ErrClosed)
	if err := iso.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// After a run the pool starts a replacement worker, and an idle worker that died is replaced
// without failing a run.
func TestIsolatedPoolReplenishes(t *testing.T) {
	cfg := isoConfig()
	cfg.PoolSize = 2
	iso := newIsolatedT(t, cfg)
	healthy(t, iso)
	idle := waitIdle(iso, 2)
	if err := syscall.Kill(idle[0].pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-idle[0].exited
	healthy(t, iso)
	healthy(t, iso)
	waitIdle(iso, 2)
}

// waitIdle blocks until n workers are idle and returns them.
func waitIdle(iso *Runtime, n int) []*worker {
	for {
		iso.mu.Lock()
		idle, changed := append([]*worker(nil), iso.idle...), iso.changed
		iso.mu.Unlock()
		if len(idle) >= n {
			return idle
		}
		<-changed
	}
}

func TestIsolatedConfigValidation(t *testing.T) {
	for _, cfg := range []coderuntime.Config{{Engine: "v8"}, {Isolation: "container"}, {PoolSize: -1}, {MaxMemoryBytes: 1 << 20}, {MaxMessageBytes: -1}} {
		if _, err := New(cfg); !errors.Is(err, coderuntime.ErrInvalidConfig) {
			t.Errorf("NewIsolated(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := NewFromConfig(cfg); !errors.Is(err, coderuntime.ErrInvalidConfig) {
			t.Errorf("NewRuntime(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	rt, err := NewFromConfig(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.(*Runtime); !ok {
		t.Errorf("NewRuntime default is a %T, want *Isolated", rt)
	}
	_ = rt.(*Runtime).Close()
	rt, err = NewFromConfig(coderuntime.Config{Isolation: coderuntime.IsolationNone})
	if _, ok := rt.(*goja.Runtime); !ok || err != nil {
		t.Errorf("NewRuntime(none) = %T, %v, want *Goja", rt, err)
	}
}

// TestIsolatedConfigReportsTheHeapCeilingItApplies: a worker process caps its run's heap at half of
// MaxMemoryBytes; Config says so instead of the configured (larger) MaxHeapBytes.
func TestIsolatedConfigReportsTheHeapCeilingItApplies(t *testing.T) {
	for _, tc := range []struct {
		heap, memory, want int64
	}{
		{0, 512 << 20, 256 << 20},         // the default 1 GiB is over half the default memory cap
		{1 << 30, 1 << 30, 512 << 20},     // as the configuration
		{-1, 256 << 20, 128 << 20},        // disabled in the host: the worker still caps
		{100 << 20, 512 << 20, 100 << 20}, // below half: as configured
	} {
		iso, err := New(coderuntime.Config{MaxHeapBytes: tc.heap, MaxMemoryBytes: tc.memory})
		if err != nil {
			t.Fatal(err)
		}
		if got := iso.Config().MaxHeapBytes; got != tc.want {
			t.Errorf("MaxHeapBytes %d, MaxMemoryBytes %d: Config().MaxHeapBytes = %d, want %d", tc.heap, tc.memory, got, tc.want)
		}
		if got := workerHeapBytes(iso.Config()); got != tc.want {
			t.Errorf("the worker would apply %d, Config reports %d", got, tc.want)
		}
		_ = iso.Close()
	}
}

// waitWaiting blocks until n runs wait for a run slot.
func waitWaiting(iso *Runtime, n int) {
	for {
		iso.mu.Lock()
		w, changed := iso.waiting, iso.changed
		iso.mu.Unlock()
		if w >= n {
			return
		}
		<-changed
	}
}

// TestIsolatedCapsTheRunsInProgress: no more runs than MaxWorkers, and than MaxTotalMemoryBytes
// holds at MaxMemoryBytes each, run at once; a run beyond waits, and starts when one ends.
func TestIsolatedCapsTheRunsInProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*coderuntime.Config)
	}{
		{"MaxWorkers", func(c *coderuntime.Config) { c.MaxWorkers = 1 }},
		{"MaxTotalMemoryBytes", func(c *coderuntime.Config) { c.MaxMemoryBytes = 128 << 20; c.MaxTotalMemoryBytes = 255 << 20 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := isoConfig()
			tc.mod(&cfg)
			iso := newIsolatedT(t, cfg)
			if got := cap(iso.slots); got != 1 {
				t.Fatalf("run slots = %d, want 1", got)
			}
			release := make(chan struct{})
			entered := make(chan struct{})
			var secondRan atomic.Bool
			first := make(chan error, 1)
			go func() {
				_, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.hold({})", Bindings: map[string]coderuntime.Binding{
					"hold": func(context.Context, json.RawMessage) (json.RawMessage, error) {
						close(entered)
						<-release
						return nil, nil
					}}})
				first <- err
			}()
			<-entered
			second := make(chan error, 1)
			go func() {
				_, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.mark({})", Bindings: map[string]coderuntime.Binding{
					"mark": func(context.Context, json.RawMessage) (json.RawMessage, error) {
						secondRan.Store(true)
						return nil, nil
					}}})
				second <- err
			}()
			waitWaiting(iso, 1)
			if secondRan.Load() {
				t.Fatal("the second run started while the first held the only slot")
			}
			close(release)
			if err := <-first; err != nil {
				t.Fatalf("first run: %v", err)
			}
			if err := <-second; err != nil || !secondRan.Load() {
				t.Fatalf("second run: %v (ran %v)", err, secondRan.Load())
			}
		})
	}
}

// TestIsolatedQueueWaitCountsInTheBudget: a run that waits for a slot longer than its Timeout fails
// with kind timeout, without its program having started. The only slot is held by the test, as a
// run in progress would hold it.
func TestIsolatedQueueWaitCountsInTheBudget(t *testing.T) {
	cfg := isoConfig()
	cfg.MaxWorkers = 1
	cfg.Timeout = 100 * time.Millisecond
	iso := newIsolatedT(t, cfg)
	iso.slots <- struct{}{}
	defer func() { <-iso.slots }()
	var ran atomic.Bool
	_, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.mark({})", Bindings: map[string]coderuntime.Binding{
		"mark": func(context.Context, json.RawMessage) (json.RawMessage, error) { ran.Store(true); return nil, nil }}})
	wantFailure(t, err, coderuntime.KindTimeout, context.DeadlineExceeded)
	if ran.Load() || !strings.Contains(err.Error(), "waited for a worker process") {
		t.Fatalf("err = %v, program ran %v", err, ran.Load())
	}
	iso.mu.Lock()
	busy := len(iso.busy)
	iso.mu.Unlock()
	if busy != 0 {
		t.Fatalf("%d workers busy, want none: the run must not have taken one", busy)
	}
}

// TestIsolatedCloseWakesTheRunsWaitingForASlot: Close ends a run waiting for a slot as an abort
// caused by ErrClosed.
func TestIsolatedCloseWakesTheRunsWaitingForASlot(t *testing.T) {
	cfg := isoConfig()
	cfg.MaxWorkers = 1
	iso, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	iso.slots <- struct{}{} // a run in progress
	second := make(chan error, 1)
	go func() {
		_, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
		second <- err
	}()
	waitWaiting(iso, 1)
	_ = iso.Close()
	wantFailure(t, <-second, coderuntime.KindAbort, ErrClosed)
}

// TestConfigValidatesTheWorkerCaps: negative caps and a total memory budget below one worker's are
// refused; the defaults fill in.
func TestConfigValidatesTheWorkerCaps(t *testing.T) {
	for _, c := range []coderuntime.Config{{MaxWorkers: -1}, {MaxTotalMemoryBytes: -1}, {MaxTotalMemoryBytes: 100 << 20}, {MaxMemoryBytes: 1 << 30, MaxTotalMemoryBytes: 512 << 20}} {
		if err := c.Validate(); !errors.Is(err, coderuntime.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	d := coderuntime.Config{}.WithDefaults()
	if d.MaxWorkers != 4 || d.MaxTotalMemoryBytes != 2<<30 || runSlots(d) != 4 {
		t.Fatalf("defaults: MaxWorkers %d, MaxTotalMemoryBytes %d, slots %d", d.MaxWorkers, d.MaxTotalMemoryBytes, runSlots(d))
	}
}

// TestIsolatedHandOffTimerArmedOnce: the parent's hand-off timer (the reader running the only call
// in flight hands reading over after handoffAfter) is armed once for a program awaiting its calls
// one by one, not per call: arming a timer wakes a thread of the runtime. With the hand-off after
// an hour it does not fire during the run, and 50 calls arm it once (50 times when armed per call).
func TestIsolatedHandOffTimerArmedOnce(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	iso.handAfter = time.Hour
	arms := -1
	bind := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		iso.mu.Lock()
		defer iso.mu.Unlock()
		for w := range iso.busy { // the run's worker, the only one busy
			w.hmu.Lock()
			arms = w.handArms
			w.hmu.Unlock()
		}
		return json.RawMessage(`1`), nil
	}
	res, err := iso.Run(context.Background(), coderuntime.Program{
		Source:   "let s = 0\nfor (let i = 0; i < 50; i++) s += await tools.f({})\nreturn s",
		Bindings: map[string]coderuntime.Binding{"f": bind}})
	if err != nil || string(res.Value) != "50" {
		t.Fatalf("run: %v, %v", res, err)
	}
	if arms != 1 {
		t.Fatalf("the hand-off timer was armed %d times by 50 calls, want once", arms)
	}
}
