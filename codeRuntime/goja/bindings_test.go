package goja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
)

type codedErr struct{ code, msg string }

func (e *codedErr) Error() string { return e.msg }
func (e *codedErr) Code() string  { return e.code }
func (e *codedErr) Name() string  { return "ToolError" }
func TestBindings(t *testing.T) {
	g := newTestRuntime(t)
	var mu sync.Mutex
	var seen []string
	record := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, string(args))
		mu.Unlock()
		return json.RawMessage(`{"ok":true,"got":` + string(args) + `}`), nil
	}
	bindings := map[string]coderuntime.Binding{
		"echo":    echo,
		"record":  record,
		"my-tool": echo,
		"fail": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("wrapped: %w", &codedErr{code: "TOOL_DENIED", msg: "denied by policy"})
		},
		"plain": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("plain failure")
		},
		"boom": func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("kaboom") },
		"none": func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil },
		"bad":  func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{nope`), nil },
	}
	tests := []struct{ name, src, want string }{
		{"sequential", "const a = await tools.echo({n: 1})\nconst b = await tools.echo({n: a.n + 1})\nreturn b.n", "2"},
		{"Promise.all", "const rs = await Promise.all([1, 2, 3, 4, 5].map((n) => tools.echo({ n })))\nreturn rs.map((r) => r.n)", "[1,2,3,4,5]"},
		{"exotic name", "return await tools['my-tool']({ x: 'y' })", `{"x":"y"}`},
		{"undefined argument is {}", "return await tools.echo()", `{}`},
		{"argument is JSON-normalized", "return await tools.echo({ d: new Date(0), f: () => 1, u: undefined, n: NaN })", `{"d":"1970-01-01T00:00:00.000Z","n":null}`},
		{"error carries code, name and message", "try { await tools.fail({}) } catch (e) { return [e instanceof Error, e.code, e.name, e.message] }",
			`[true,"TOOL_DENIED","ToolError","wrapped: denied by policy"]`},
		{"plain error", "try { await tools.plain({}) } catch (e) { return [e.code, e.name, e.message] }", `[null,"Error","plain failure"]`},
		{"panic rejects", "try { await tools.boom({}) } catch (e) { return e.message }", `"binding \"boom\" panicked: kaboom"`},
		{"nil result is undefined", "return typeof (await tools.none({}))", `"undefined"`},
		{"invalid JSON rejects", "try { await tools.bad({}) } catch (e) { return e.code }", `"INVALID_RESULT"`},
		{"circular argument rejects that call only", "let m\nconst c: any = {}\nc.c = c\ntry { await tools.echo({ n: c }) } catch (e) { m = e.code }\nreturn [m, (await tools.echo({ n: 2 })).n]", `["INVALID_ARGUMENTS",2]`},
		{"circular argument rejects", "const o: any = {}; o.o = o\ntry { await tools.echo(o) } catch (e) { return e.name }", `"TypeError"`},
		{"function argument rejects", "try { await tools.echo(() => 1) } catch (e) { return e.code }", `"INVALID_ARGUMENTS"`},
		{"bindings are functions", "return [typeof tools.echo, Object.keys(tools).sort()]", `["function",["bad","boom","echo","fail","my-tool","none","plain","record"]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, coderuntime.Program{Source: tt.src, Bindings: bindings})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
	t.Run("submission order with concurrency 1", func(t *testing.T) {
		g1 := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 1 })
		seen = nil
		mustRun(t, g1, coderuntime.Program{Source: "await Promise.all([1, 2, 3].map((n) => tools.record({ n })))", Bindings: bindings})
		if got := strings.Join(seen, ","); got != `{"n":1},{"n":2},{"n":3}` {
			t.Fatalf("calls = %s", got)
		}
	})
	t.Run("too many pending calls", func(t *testing.T) {
		g1 := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 1; c.MaxPendingCalls = 2 })
		res := mustRun(t, g1, coderuntime.Program{Source: "const r = await Promise.allSettled([1, 2, 3].map((n) => tools.echo({ n })))\nreturn r.map((x) => x.status)", Bindings: bindings})
		if string(res.Value) != `["fulfilled","fulfilled","rejected"]` {
			t.Fatalf("value = %s", res.Value)
		}
	})
	t.Run("custom namespace", func(t *testing.T) {
		res := mustRun(t, g, coderuntime.Program{Source: "return [typeof tools, await sdk.echo({ a: 1 })]", Namespace: "sdk", Bindings: bindings})
		if string(res.Value) != `["undefined",{"a":1}]` {
			t.Fatalf("value = %s", res.Value)
		}
	})
}

func TestBindingAfterSettlementIsRefused(t *testing.T) {
	g := newTestRuntime(t)
	var calls atomic.Int32
	count := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		return args, nil
	}
	src := `const f = tools.count
await f({ first: true })
Promise.resolve().then(() => Promise.resolve()).then(() => { f({ late: true }).catch(() => {}) })
return 'settled'`
	res := mustRun(t, g, coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"count": count}})
	if string(res.Value) != `"settled"` || calls.Load() != 1 {
		t.Fatalf("value = %s, calls = %d; want the late call refused", res.Value, calls.Load())
	}
	t.Run("refusal is a rejection the program could see", func(t *testing.T) {
		src := `let seen = ''
const p = new Promise<void>((resolve) => { queueLate = () => tools.count({}).catch((e: any) => { seen = e.code; resolve() }) })
var queueLate: any
return 1`
		// The late call runs after settlement; nothing observes it, but it must not reach Go.
		mustRun(t, g, coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"count": count}})
		if calls.Load() != 1 {
			t.Fatalf("calls = %d", calls.Load())
		}
	})
}

type detailedErr struct{}

func (detailedErr) Error() string { return "boom" }
func (detailedErr) Code() string  { return "E_BOOM" }
func (detailedErr) ErrorDetails() map[string]string {
	return map[string]string{"tool": "t1", "code": "IGNORED", "message": "IGNORED"}
}

// TestBindingErrorDetails: ErrorDetails entries become string properties of
// the rejection, but cannot override message, code, name or stack.
func TestBindingErrorDetails(t *testing.T) {
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fail := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, fmt.Errorf("wrapped: %w", detailedErr{})
	}
	res, err := g.Run(context.Background(), coderuntime.Program{
		Source:   `try { await tools.f({}) } catch (e: any) { return [e.tool, e.code, e.message, typeof e.tool] }`,
		Bindings: map[string]coderuntime.Binding{"f": fail},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Value); got != `["t1","E_BOOM","wrapped: boom","string"]` {
		t.Fatalf("value = %s", got)
	}
}

// TestBindingNamedProto: a binding may be named __proto__ (or any other
// special key) and is an own property of the namespace, callable as such.
func TestBindingNamedProto(t *testing.T) {
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"called"`), nil
	}
	res, err := g.Run(context.Background(), coderuntime.Program{
		Source:   `return [Object.getPrototypeOf(tools) === Object.prototype, Object.keys(tools).length, await tools["__proto__"]({})]`,
		Bindings: map[string]coderuntime.Binding{"__proto__": f, "a": f},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Value); got != `[true,2,"called"]` {
		t.Fatalf("value = %s", got)
	}
}

// TestUnawaitedFailedCallIsNoted: a binding call the program did not await, and that failed, is
// visible in the run's logs as an unhandled rejection (a handled one is not); the run still succeeds.
func TestUnawaitedFailedCallIsNoted(t *testing.T) {
	g := newTestRuntime(t)
	fail := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &codedErr{code: "X", msg: "nope"}
	}
	res := mustRun(t, g, coderuntime.Program{
		Source:             "tools.fail({})\ntools.fail({}).catch(() => {})\nconst p = tools.fail({})\nawait tools.echo({})\np.then(() => 1, () => 2)\nreturn 1",
		Bindings:           map[string]coderuntime.Binding{"fail": fail, "echo": echo},
		MaxConcurrentCalls: 1,
	})
	if len(res.Logs) != 1 || res.Logs[0] != (coderuntime.Log{Level: "warn", Text: "unhandled rejection: ToolError: nope"}) {
		t.Fatalf("logs = %+v, want one warn note of the unawaited failed call", res.Logs)
	}
}

// TestBindingStringResultReuse: a run reuses the value of a short string result the same binding
// answer decoded to last time (run.lastStr); every answer still decodes to what JSON.parse makes of
// it, also when the binding rewrites the buffer it returned before.
func TestBindingStringResultReuse(t *testing.T) {
	g := newTestRuntime(t)
	var shared []byte
	bindings := map[string]coderuntime.Binding{
		// raw answers the JSON text in its argument's s, verbatim.
		"raw": func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			var a struct{ S string }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return json.RawMessage(a.S), nil
		},
		// same answers its s in one buffer, rewritten for each call.
		"same": func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			var a struct{ S string }
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			shared = append(shared[:0], a.S...)
			return shared, nil
		},
	}
	docs := []string{`"ok"`, `"ok"`, `"ok" `, `"no"`, `"ok"`, `"\u00e9"`, `"é"`, `"é"`, `{"a":"ok"}`, `"ok"`, `"a\"b"`, `"a\"b"`, `""`, `""`, `1`, `"ok"`}
	src, _ := json.Marshal(docs)
	prog := "const docs = " + string(src) + "\nconst out = []\nfor (const s of docs) { out.push(await tools.raw({ s }), await tools.same({ s })) }\n" +
		"return out.every((v, i) => JSON.stringify(v) === JSON.stringify(JSON.parse(docs[i >> 1]))) ? out : 'mismatch'"
	res := mustRun(t, g, coderuntime.Program{Source: prog, Bindings: bindings})
	want := `["ok","ok","ok","ok","ok","ok","no","no","ok","ok","é","é","é","é","é","é",{"a":"ok"},{"a":"ok"},"ok","ok","a\"b","a\"b","a\"b","a\"b","","","","",1,1,"ok","ok"]`
	if string(res.Value) != want {
		t.Fatalf("value = %s, want %s", res.Value, want)
	}
}

// TestBindingRepeatedStringResultAllocatesNothing pins run.lastStr: 3,000 awaited calls answering
// the same short string allocate at least 3,000 objects fewer than 3,000 calls answering two
// strings in turn (each answer then differs from the one before, so each is decoded: about 2
// allocations). Without the reuse both programs allocate alike, within what a run's count varies
// by (steps of about 740, the next VM's preparation: 200 runs saw one step either way).
func TestBindingRepeatedStringResultAllocatesNothing(t *testing.T) {
	if crtest.RaceDetector {
		t.Skip("the race detector changes allocation counts")
	}
	g := newTestRuntime(t)
	answer := func(flip bool) coderuntime.Binding {
		n := 0
		return func(context.Context, json.RawMessage) (json.RawMessage, error) {
			n++
			if flip && n%2 == 0 {
				return json.RawMessage(`"no"`), nil
			}
			return json.RawMessage(`"ok"`), nil
		}
	}
	const src = "let n = 0\nfor (let i = 0; i < 3000; i++) { if ((await tools.a({})).length === 2) n++ }\nreturn n"
	allocs := func(flip bool) float64 {
		p := coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"a": answer(flip)}}
		return testing.AllocsPerRun(5, func() {
			if res := mustRun(t, g, p); string(res.Value) != "3000" {
				t.Fatalf("value = %s, want 3000", res.Value)
			}
		})
	}
	same, alternating := allocs(false), allocs(true)
	t.Logf("same answer: %.0f allocations; alternating answers: %.0f", same, alternating)
	if alternating-same < 3000 {
		t.Fatalf("3,000 repeated answers allocate %.0f, alternating ones %.0f: want at least 3,000 fewer", same, alternating)
	}
}
