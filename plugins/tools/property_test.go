package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestP1_P5_P10_PropertyRandomListeners runs calls through randomized
// listeners at every phase (allow, deny, ask, error, panic, malformed
// decisions, slow, cancel) and checks: exactly one tools/result per call,
// a denied tool never runs, results are valid, and every observer sees the
// same result as the caller although each tries to corrupt its copy.
func TestP1_P5_P10_PropertyRandomListeners(t *testing.T) {
	e := newEnv(t)
	var bodyRan atomic.Int32
	d := echo("t", "ok")
	d.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		bodyRan.Add(1)
		switch x.Arg("body").Int() {
		case 1:
			return tools.Output{}, errors.New("tool failed")
		case 2:
			panic("tool panicked")
		case 3:
			return tools.Output{Content: []tools.Content{tools.Text("\xff")}}, nil
		case 4:
			if c, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
				c()
			}
			return tools.Output{Content: []tools.Content{tools.Text("x")}}, nil
		}
		return tools.Output{Content: []tools.Content{tools.Text("ok")}, Meta: json.RawMessage(`{"n":1}`), AdditionalContext: []string{"tool"}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	seed := uint64(0x5eed)
	for iter := 0; iter < 400; iter++ {
		rng := rand.New(rand.NewPCG(seed, uint64(iter)))
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), cancelKey{}, context.CancelFunc(nil)))
		ctx = context.WithValue(ctx, cancelKey{}, cancel)
		var (
			mu        sync.Mutex
			outerPre  *tools.PreDecision
			outerErr  error
			guardDeny bool
			approved  bool
			observed  []string
			notices   int
		)
		choose := func(n int) int { return rng.IntN(n) }
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
				k, outer := choose(9), i == 0
				if _, err := host.OnWaterfall(lc, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (d tools.PreDecision, err error) {
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
					}
					return next(ctx)
				}); err != nil {
					return err
				}
			}
			gk := choose(5)
			if _, err := e.reg.Guard(c, func(*tools.Execution) string {
				switch gk {
				case 0:
					mu.Lock()
					guardDeny = true
					mu.Unlock()
					return "random guard"
				case 1:
					mu.Lock()
					guardDeny = true
					mu.Unlock()
					panic("guard panicked")
				case 2:
					cancel()
				}
				return ""
			}); err != nil {
				return err
			}
			ak := choose(5)
			if _, err := c.Provide(tools.ApprovalService, tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
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
				}
				cancel()
				return tools.Cancelled, nil
			})); err != nil {
				return err
			}
			for i := choose(3); i > 0; i-- {
				k := choose(7)
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
					}
					return next(ctx)
				}); err != nil {
					return err
				}
			}
			for i := choose(3); i > 0; i-- {
				k := choose(8)
				if _, err := host.OnWaterfall(lc, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
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
					observed = append(observed, string(b))
					notices++
					mu.Unlock()
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
		c := tools.Call{ID: fmt.Sprint("call-", iter), Name: "t", Agent: agent, Arguments: json.RawMessage(fmt.Sprintf(`{"body":%d}`, choose(6)))}
		if choose(10) == 0 {
			cancel()
		}
		if choose(12) == 0 {
			c.Name = "missing"
		}
		res := e.reg.Execute(ctx, c)
		ran := bodyRan.Load() != before
		b, _ := json.Marshal(res)
		mu.Lock()
		if notices != 3 {
			t.Errorf("iter %d: %d observer notifications, want 3 (one tools/result)", iter, notices)
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
		}
		mu.Unlock()
		if err := res.Validate(); err != nil || res.CallID != c.ID {
			t.Errorf("iter %d: invalid result %s: %v", iter, b, err)
		}
		if res.IsError == (res.Error == nil) && res.IsError {
			t.Errorf("iter %d: error without info: %s", iter, b)
		}
		cancel()
		if err := f.Dispose(); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.h.Stats(); st.Listeners["tools/pre-execute"] != 0 || st.Listeners["tools/result"] != 0 {
		t.Errorf("listeners left: %v", st.Listeners)
	}
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
				_, _ = e.reg.Guard(ag, func(*tools.Execution) string { return "" })
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
