package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestP1_P5_P10_G2_G3_G4_PropertyRandomListeners runs calls through
// randomized listeners at every phase (allow, deny, ask, error, panic,
// malformed decisions, slow, cancel) and hostile user code (wrappers that
// pass contexts not derived from the caller's, run next on goroutines of
// their own and return or call it after the call ended; hostile error
// values; runtime.Goexit; approvers answering after the request was
// withdrawn), and checks: exactly one tools/result per call, which every
// observer sees the same although each tries to corrupt its copy, and the
// caller too when Execute returns; a denied or cancelled call never starts
// its body; no body runs once the call's result was given; policy saw the
// arguments the body got; results are valid and carry error info.
func TestP1_P5_P10_G2_G3_G4_PropertyRandomListeners(t *testing.T) {
	e := newEnv(t)
	hostile := hostileErrorList()
	var (
		mu        sync.Mutex // guards the per-call state below
		cancelled bool       // the caller's context was cancelled
		given     bool       // the call's result was given (observer or return)
		violation []string
		bodyArgs  string
	)
	var running, bodyRan atomic.Int32
	d := echo("t", "ok")
	d.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		mu.Lock()
		if cancelled {
			violation = append(violation, "a body started after the caller cancelled")
		}
		if given {
			violation = append(violation, "a body started after the result was given")
		}
		bodyArgs = x.ArgsString()
		mu.Unlock()
		running.Add(1)
		defer running.Add(-1)
		bodyRan.Add(1)
		runtime.Gosched()
		switch k := x.Arg("body").Int(); k {
		case 1:
			return tools.Output{}, errors.New("tool failed")
		case 2:
			panic("tool panicked")
		case 3:
			return tools.Output{Content: []tools.Content{tools.Text("\xff")}}, nil
		case 4:
			if c, ok := ctx.Value(cancelKey{}).(func()); ok {
				c()
			}
			return tools.Output{Content: []tools.Content{tools.Text("x")}}, nil
		case 5:
			return tools.Output{}, hostile[int(x.Arg("hostile").Int())%len(hostile)]
		case 6:
			panic(hostile[int(x.Arg("hostile").Int())%len(hostile)])
		case 7:
			runtime.Goexit()
		}
		return tools.Output{Content: []tools.Content{tools.Text("ok")}, Meta: json.RawMessage(`{"n":1}`), AdditionalContext: []string{"tool"}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	seed := uint64(0x5eed)
	for iter := 0; iter < 600; iter++ {
		rng := rand.New(rand.NewPCG(seed, uint64(iter)))
		choose := func(n int) int { return rng.IntN(n) }
		base, cancelBase := context.WithCancel(context.Background())
		cancel := func() {
			mu.Lock()
			cancelled = true
			cancelBase()
			mu.Unlock()
		}
		ctx := context.WithValue(base, cancelKey{}, cancel)
		mu.Lock()
		cancelled, given, violation, bodyArgs = false, false, nil, ""
		mu.Unlock()
		var (
			outerPre  *tools.PreDecision
			outerErr  error
			guardDeny bool
			approved  bool
			preArgs   string
			observed  []string
			notices   int
			spawned   sync.WaitGroup
			gate      = make(chan struct{})
		)
		herr := hostile[choose(len(hostile))]
		p := host.Define("random", nil, func(c *host.Context) error {
			// Policy listeners are global or scoped to the agent (then
			// calls without that agent do not reach them).
			lc := c
			if choose(2) == 0 {
				sc, err := c.Scope("agent")
				if err != nil {
					return err
				}
				lc = sc
			}
			nPre := choose(3)
			for i := 0; i < nPre; i++ {
				k, outer := choose(11), i == 0
				if _, err := host.OnWaterfall(lc, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (d tools.PreDecision, err error) {
					mu.Lock()
					preArgs = x.ArgsString()
					mu.Unlock()
					defer func() {
						if outer {
							mu.Lock()
							outerPre, outerErr = &d, err
							mu.Unlock()
						}
					}()
					switch k {
					case 0:
						return tools.Allowed(), nil
					case 1:
						return tools.Denied("random deny"), nil
					case 2:
						return tools.Asked("random ask"), nil
					case 3:
						return tools.PreDecision{}, errors.New("pre failed")
					case 4:
						err = errors.New("pre panicked")
						panic("pre panicked")
					case 5:
						return tools.PreDecision{Kind: "bogus"}, nil
					case 6:
						cancel()
						return next(ctx)
					case 7:
						runtime.Gosched()
						return next(ctx)
					case 8:
						return tools.PreDecision{}, herr
					case 9:
						err = errors.New("pre called Goexit")
						runtime.Goexit()
					}
					return next(ctx)
				}); err != nil {
					return err
				}
			}
			gk := choose(6)
			if _, err := e.reg.Guard(c, func(*tools.Execution) error {
				switch gk {
				case 0:
					mu.Lock()
					guardDeny = true
					mu.Unlock()
					return errors.New("random guard")
				case 1:
					mu.Lock()
					guardDeny = true
					mu.Unlock()
					panic("guard panicked")
				case 2:
					cancel()
				case 3:
					mu.Lock()
					guardDeny = true
					mu.Unlock()
					runtime.Goexit()
				}
				return nil
			}); err != nil {
				return err
			}
			ak := choose(8)
			if _, err := tools.ApprovalService.Provide(c, tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				switch ak {
				case 0:
					mu.Lock()
					approved = true
					mu.Unlock()
					return tools.AllowedOnce, nil
				case 1:
					return tools.Rejected, nil
				case 2:
					panic("approver panicked")
				case 3:
					return "", errors.New("approver failed")
				case 4:
					// A late answer: the request was withdrawn first.
					cancel()
					<-ctx.Done()
					return tools.AllowedOnce, nil
				case 5:
					return tools.AllowedOnce, herr
				case 6:
					runtime.Goexit()
				}
				cancel()
				return tools.Cancelled, nil
			})); err != nil {
				return err
			}
			for i := choose(3); i > 0; i-- {
				k := choose(15)
				if _, err := host.OnWaterfall(lc, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
					switch k {
					case 0:
						return tools.Result{Content: []tools.Content{tools.Text("short")}}, nil
					case 1:
						return tools.Result{}, errors.New("wrapper failed")
					case 2:
						panic("wrapper panicked")
					case 3:
						cancel()
					case 4:
						_, _ = next(ctx) // retry
					case 5:
						r, err := next(ctx)
						r.Content = append(r.Content, tools.Text("wrapped"))
						r.AdditionalContext = append(r.AdditionalContext, "wrapper")
						return r, err
					case 6:
						// A context not derived from the caller's.
						return next(context.Background())
					case 7:
						cancel()
						return next(context.WithoutCancel(ctx))
					case 8:
						// next on a goroutine of its own, waited for.
						var r tools.Result
						var err error
						done := make(chan struct{})
						spawned.Go(func() { defer close(done); r, err = next(ctx) })
						<-done
						return r, err
					case 9:
						// next on a goroutine of its own, abandoned.
						spawned.Go(func() { _, _ = next(ctx) })
						return tools.Result{Content: []tools.Content{tools.Text("gave up")}, IsError: true}, nil
					case 10:
						// next kept and called after the call ended.
						spawned.Go(func() {
							<-gate
							_, _ = next(context.Background())
						})
						return next(ctx)
					case 11:
						return tools.Result{}, herr
					case 12:
						runtime.Goexit()
					}
					return next(ctx)
				}); err != nil {
					return err
				}
			}
			for i := choose(3); i > 0; i-- {
				k := choose(10)
				if _, err := host.OnWaterfall(lc, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
					if running.Load() != 0 {
						mu.Lock()
						violation = append(violation, "post-execute ran while a body ran")
						mu.Unlock()
					}
					r := in.Result()
					if len(r.Content) > 0 {
						r.Content[0].Text = "post corrupted its copy"
					}
					switch k {
					case 0:
						return tools.PostDecision{Kind: tools.Accept, Content: []tools.Content{tools.Text("replaced")}, AdditionalContext: "post"}, nil
					case 1:
						return tools.Blocked("blocked"), nil
					case 2:
						return tools.PostDecision{}, errors.New("post failed")
					case 3:
						panic("post panicked")
					case 4:
						return tools.PostDecision{Kind: tools.Block}, nil
					case 5:
						cancel()
					case 6:
						return tools.PostDecision{}, herr
					case 7:
						runtime.Goexit()
					}
					return next(ctx)
				}); err != nil {
					return err
				}
			}
			for i := 0; i < 3; i++ {
				k := choose(3)
				if _, err := host.On(c, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
					r := n.Result()
					b, _ := json.Marshal(r)
					mu.Lock()
					given = true
					observed = append(observed, string(b))
					notices++
					mu.Unlock()
					if running.Load() != 0 {
						mu.Lock()
						violation = append(violation, "tools/result while a body ran")
						mu.Unlock()
					}
					if len(r.Content) > 0 {
						r.Content[0].Text = "observer corrupted its copy"
					}
					if r.Error != nil {
						r.Error.Code = "CORRUPTED"
					}
					switch k {
					case 0:
						panic("observer panicked")
					case 1:
						return errors.New("observer failed")
					}
					return nil
				}); err != nil {
					return err
				}
			}
			return nil
		})
		f, err := e.root.Plugin(p, nil)
		if err != nil || f.Err() != nil {
			t.Fatal(err, f.Err())
		}
		before := bodyRan.Load()
		agent := host.ScopeKey("")
		if choose(2) == 0 {
			agent = "agent"
		}
		c := tools.Call{ID: fmt.Sprint("call-", iter), Name: "t", Agent: agent,
			Arguments: json.RawMessage(fmt.Sprintf(`{"body":%d,"hostile":%d}`, choose(9), choose(len(hostile))))}
		if choose(10) == 0 {
			cancel()
		}
		if choose(12) == 0 {
			c.Name = "missing"
		}
		var res tools.Result
		returned := false
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			res = e.reg.Execute(ctx, c)
			returned = true
		}()
		<-exited
		mu.Lock()
		given = true
		mu.Unlock()
		if running.Load() != 0 {
			t.Errorf("iter %d: a body still runs after the call ended", iter)
		}
		close(gate)
		spawned.Wait()
		ran := bodyRan.Load() != before
		mu.Lock()
		for _, v := range violation {
			t.Errorf("iter %d: %s", iter, v)
		}
		if notices != 3 {
			t.Errorf("iter %d: %d observer notifications, want 3 (one tools/result)", iter, notices)
		}
		var b []byte
		if returned {
			b, _ = json.Marshal(res)
			if err := res.Validate(); err != nil || res.CallID != c.ID {
				t.Errorf("iter %d: invalid result %s: %v", iter, b, err)
			}
			if res.IsError && res.Error == nil {
				t.Errorf("iter %d: error without info: %s", iter, b)
			}
			if res.IsError && (code(res) == tools.CodeInternal || code(res) == tools.CodeInvalidResult && !strings.Contains(text(res), "invalid UTF-8")) {
				t.Errorf("iter %d: %s", iter, b)
			}
		} else if len(observed) > 0 {
			b = []byte(observed[0])
			var r tools.Result
			if json.Unmarshal(b, &r) != nil || !r.IsError || r.Error == nil || r.Error.Name != "Goexit" {
				t.Errorf("iter %d: Execute did not return, and tools/result carried %s", iter, b)
			}
		}
		for _, o := range observed {
			if o != string(b) {
				t.Errorf("iter %d: observer saw %s, caller %s", iter, o, b)
			}
		}
		if ran {
			if guardDeny {
				t.Errorf("iter %d: tool ran although a guard denied", iter)
			}
			if outerPre != nil {
				ok := outerErr == nil && (outerPre.Kind == tools.Allow || outerPre.Kind == tools.Ask && approved)
				if !ok {
					t.Errorf("iter %d: tool ran after pre decision %+v err %v approved %v", iter, *outerPre, outerErr, approved)
				}
			}
			if preArgs != "" && bodyArgs != preArgs {
				t.Errorf("iter %d: policy saw %s, the body %s", iter, preArgs, bodyArgs)
			}
		}
		mu.Unlock()
		cancelBase()
		if err := f.Dispose(); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.h.Stats(); st.Listeners["tools/pre-execute"] != 0 || st.Listeners["tools/result"] != 0 {
		t.Errorf("listeners left: %v", st.Listeners)
	}
}

// hostileErrorList is hostileErrors without the cyclic chains (a listener
// returning one hangs the host's own failure logging, which walks the chain
// with errors.As), in a fixed order.
func hostileErrorList() []error {
	m := hostileErrors()
	names := make([]string, 0, len(m))
	for n := range m {
		if !strings.HasPrefix(n, "cyclic") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	list := make([]error, len(names))
	for i, n := range names {
		list[i] = m[n]
	}
	return list
}

type cancelKey struct{}

// TestR_ConcurrentExecuteRegisterDispose runs Execute concurrently with
// registration and disposal of tools, restrictions, guards and scopes; run
// it with -race.
func TestR_ConcurrentExecuteRegisterDispose(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("stable", "ok"))
	var rc recorder
	rc.listen(t, e.root)
	const workers, calls = 4, 200
	var wg sync.WaitGroup
	var executed atomic.Int64
	stop := make(chan struct{})
	for w := 0; w < 2; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ag, err := e.root.Scope(host.ScopeKey(fmt.Sprint("churn-", w, "-", i%3)))
				if err != nil {
					t.Error(err)
					return
				}
				off, err := e.reg.Register(e.root, echo(fmt.Sprint("g", w, "-", i), "x"))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = e.reg.Register(ag, echo("stable", "scoped"))
				_, _ = e.reg.Restrict(ag, tools.Restriction{Deny: []string{"stable"}})
				_, _ = e.reg.Guard(ag, func(*tools.Execution) error { return nil })
				_ = e.reg.Schemas(ag.ScopeKey())
				_ = off()
				_ = ag.Fiber().Dispose()
			}
		})
	}
	var ex sync.WaitGroup
	for w := 0; w < workers; w++ {
		ex.Go(func() {
			for i := 0; i < calls; i++ {
				c := call("stable", `{"i":1}`)
				c.Agent = host.ScopeKey(fmt.Sprint("churn-", i%2, "-", i%3))
				res := e.reg.Execute(context.Background(), c)
				if res.IsError && code(res) != tools.CodeUnknownTool {
					t.Errorf("unexpected %+v", res)
				}
				executed.Add(1)
			}
		})
	}
	ex.Wait()
	close(stop)
	wg.Wait()
	if int64(rc.count()) != executed.Load() {
		t.Errorf("%d results for %d calls", rc.count(), executed.Load())
	}
}
