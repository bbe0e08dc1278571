package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The Code Mode environment of the registry's own tests that run sub-calls through a run_code
// program (batches, scopes): a copy of package codemode's test helper (Code Mode lives there).

// memLog is a SessionLog that records what it is given.
type memLog struct {
	mu     sync.Mutex
	events []tools.SessionEvent
	fail   error
	panic  any // Append panics with it after recording, when set
}

func (l *memLog) Append(_ context.Context, e tools.SessionEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if l.panic != nil {
		panic(l.panic)
	}
	return l.fail
}

type codeOpts struct {
	mode      tools.Mode
	prompt    systemprompt.Config
	runtime   coderuntime.Config
	noRuntime bool
	noLog     bool
	// maxParallel is the tools plugin's MaxParallelSubCalls.
	maxParallel int
}

type codeEnv struct {
	*env
	sp  *systemprompt.Service
	log *memLog
}

// testRuntime is the runtime configuration of programs that must succeed:
// budgets far beyond what any of them needs (a few milliseconds), so that
// a loaded machine cannot fail them. Tests of the budgets themselves set
// their own, with programs that never end. Programs run in process: these
// tests pin the bridge (many under testing/synctest, whose bubble cannot
// host a worker process); isolation has its own tests in coderuntime.
var testRuntime = coderuntime.Config{Timeout: time.Minute, CPUBudget: 30 * time.Second, Isolation: coderuntime.IsolationNone}

func newCodeEnv(t testing.TB, o codeOpts) *codeEnv {
	t.Helper()
	if o.mode == "" {
		o.mode = tools.Code
	}
	if o.runtime == (coderuntime.Config{}) {
		o.runtime = testRuntime
	}
	if !o.noRuntime && inBubble() && o.runtime.Isolation != coderuntime.IsolationNone {
		// A worker process runs on the real clock while the bubble's
		// deadline is fake, and the goroutine reading its pipe never
		// counts as idle: every timing the test means to fix would race
		// (TestC6_SettlementCancelsAndDrainsInFlightSubCalls/timeout did).
		t.Fatalf("newCodeEnv in a synctest bubble needs Isolation %q, not %q", coderuntime.IsolationNone, o.runtime.Isolation)
	}
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	load := func(p host.Plugin, cfg any) {
		t.Helper()
		f, err := root.Plugin(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
	}
	load(systemprompt.Plugin, o.prompt)
	if !o.noRuntime {
		load(isolated.Plugin, o.runtime)
	}
	load(codemode.Plugin, tools.Config{Mode: o.mode, MaxParallelSubCalls: o.maxParallel})
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := systemprompt.ServiceKey.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	ce := &codeEnv{env: &env{h: h, root: root, reg: reg}, sp: sp}
	if tt, ok := t.(*testing.T); ok {
		ce.t = tt
	}
	if !o.noLog {
		ce.log = &memLog{}
		must2(t)(tools.SessionLogService.Provide(root, tools.SessionLog(ce.log)))
	}
	return ce
}

// inBubble reports whether the caller runs in a testing/synctest bubble:
// the bubble's fake clock starts at midnight UTC, 2000-01-01, a real clock
// is decades past it.
func inBubble() bool { return time.Now().Before(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) }

func runCode(id, src string, agent host.ScopeKey) tools.Call {
	args, _ := json.Marshal(map[string]string{"code": src, "description": "test program"})
	return tools.Call{ID: id, Name: codemode.RunCodeName, Arguments: args, Agent: agent}
}

// resultsFor counts the tools/result notices rc recorded for call id, and returns the last.
func resultsFor(rc *recorder, id string) (n int, last tools.Result) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, x := range rc.notices {
		if x.Execution().CallID() == id {
			n++
			last = x.Result()
		}
	}
	return n, last
}
