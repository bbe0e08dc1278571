package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver: it decodes each export request
// with the protocol's own Go types and keeps what arrived.
type collector struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics []string // metric names
	headers []http.Header
	got     chan struct{} // a signal per request
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{got: make(chan struct{}, 1)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var resp proto.Message
		c.mu.Lock()
		c.headers = append(c.headers, r.Header.Clone())
		switch r.URL.Path {
		case "/v1/traces":
			var req coltracepb.ExportTraceServiceRequest
			err = proto.Unmarshal(body, &req)
			c.spans = append(c.spans, req.ResourceSpans...)
			resp = &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			var req colmetricpb.ExportMetricsServiceRequest
			err = proto.Unmarshal(body, &req)
			for _, rm := range req.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						c.metrics = append(c.metrics, m.Name)
					}
				}
			}
			resp = &colmetricpb.ExportMetricsServiceResponse{}
		default:
			err = errors.New("unknown path")
		}
		c.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
		select {
		case c.got <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(c.Close)
	return c
}

// span returns the first received span named name, with its resource's
// attributes, waiting up to budget.
func (c *collector) span(t *testing.T, name string) (*tracepb.Span, map[string]string) {
	t.Helper()
	deadline := time.After(budget)
	for {
		c.mu.Lock()
		for _, rs := range c.spans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name == name {
						c.mu.Unlock()
						return s, kvs(rs.GetResource().GetAttributes())
					}
				}
			}
		}
		c.mu.Unlock()
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("no span %q arrived within %v", name, budget)
		}
	}
}

func (c *collector) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.headers)
}

func kvs(attrs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range attrs {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// otelFreeEnv is the environment without any OTEL_* variable, plus env.
func otelFreeEnv(env ...string) []string {
	var out []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OTEL_") {
			out = append(out, e)
		}
	}
	return append(out, env...)
}

// otelDshProc runs the built dsh serving cfg over HTTP with env, and returns
// its MCP URL; stop ends it (SIGTERM) and waits for its exit.
type otelDshProc struct {
	cmd    *exec.Cmd
	stderr *syncBuf
	exited chan int
	url    string
}

func runOtelDsh(t *testing.T, cfg string, env []string) *otelDshProc {
	t.Helper()
	p := &otelDshProc{stderr: newSyncBuf(), exited: make(chan int, 1)}
	p.cmd = exec.Command(dshBinary(t), "mcp", "serve", "--config", cfg, "--http", "127.0.0.1:0")
	p.cmd.Env = env
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		p.exited <- code
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
	})
	p.url = p.stderr.waitFor(t, servingRE, p.exited)[1]
	return p
}

// stop ends the process with SIGTERM and returns how long it took to
// exit.
func (p *otelDshProc) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case code := <-p.exited:
		if code != 0 {
			t.Errorf("dsh exited %d:\n%s", code, p.stderr.String())
		}
	case <-time.After(budget):
		t.Fatalf("dsh did not stop:\n%s", p.stderr.String())
	}
	return time.Since(start)
}

// otelConfig is a dsh.json mounting the test server, with alice's token
// and a rule allowing echo.
func otelConfig(t *testing.T, extra map[string]any) string {
	m := map[string]any{
		"http":        map[string]any{"tokens": map[string]any{"alice": map[string]any{"env": "ALICE_TOKEN"}}},
		"permissions": map[string]any{"allow": []string{"mcp__t__echo"}, "deny": []string{"mcp__t__block"}},
	}
	for k, v := range extra {
		m[k] = v
	}
	return testServerConfig(t, m)
}

// A served tools/call is exported as a span to the collector the OTEL_*
// environment names, with the caller's identity and session, the tool,
// the decision and who took it, and the duration; the call metrics too.
// What is buffered is flushed when dsh stops. The header value the
// environment gives reaches the collector and never dsh's log.
func TestOtel_ServedCallSpanReachesTheOTLPCollector(t *testing.T) {
	col := newCollector(t)
	p := runOtelDsh(t, otelConfig(t, nil), otelFreeEnv("ALICE_TOKEN="+testToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL,
		"OTEL_EXPORTER_OTLP_HEADERS=x-collector-key=s3cret-header-value",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test"))
	cs, err := connect(t, p.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, cs, "traced"); r.IsError || resultText(r) != "traced" {
		t.Fatalf("call: %+v", r)
	}
	cs.Close()
	p.stop(t) // the batch is flushed at exit (its schedule is 5 s)

	s, res := col.span(t, "execute_tool mcp__t__echo")
	a := kvs(s.Attributes)
	for k, want := range map[string]string{
		"gen_ai.tool.name":       "mcp__t__echo",
		"gen_ai.operation.name":  "execute_tool",
		"gen_ai.tool.type":       "extension",
		"dsh.identity":           "token:alice",
		"dsh.tool.decision":      "allow",
		"dsh.tool.decision.by":   "rule",
		"dsh.tool.decision.rule": "mcp__t__echo",
	} {
		if a[k] != want {
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, a[k], want, a)
		}
	}
	if a["dsh.session"] == "" {
		t.Errorf("span without dsh.session: %v", a)
	}
	if s.EndTimeUnixNano <= s.StartTimeUnixNano {
		t.Errorf("span duration: %d..%d", s.StartTimeUnixNano, s.EndTimeUnixNano)
	}
	if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("span status %v", s.Status)
	}
	if res["service.name"] != "dsh" || res["deployment.environment.name"] != "test" {
		t.Errorf("resource %v", res)
	}
	col.mu.Lock()
	metrics := strings.Join(col.metrics, " ")
	h := col.headers[0]
	col.mu.Unlock()
	if !strings.Contains(metrics, "dsh.tool.calls") || !strings.Contains(metrics, "dsh.tool.duration") {
		t.Errorf("metrics received: %q", metrics)
	}
	if h.Get("X-Collector-Key") != "s3cret-header-value" {
		t.Errorf("the configured header did not reach the collector: %v", h)
	}
	if strings.Contains(p.stderr.String(), "s3cret") {
		t.Errorf("dsh's log shows the header value:\n%s", p.stderr.String())
	}
}

// Without OTEL_* variables dsh dials nothing: a listener on the OTLP
// default port (where the SDK's own default would send) accepts no
// connection while dsh serves a call and stops. With an endpoint set but
// OTEL_SDK_DISABLED=true, or both exporters "none", the collector gets
// no request either.
func TestOtel_NothingIsExportedUnlessConfigured(t *testing.T) {
	var dialled sync.WaitGroup
	accepted := make(chan struct{}, 100)
	if ln, err := net.Listen("tcp", "127.0.0.1:4318"); err != nil {
		t.Logf("port 4318 is taken (%v): the default-port check is left out", err)
	} else {
		t.Cleanup(func() { ln.Close(); dialled.Wait() })
		dialled.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- struct{}{}
				c.Close()
			}
		})
	}
	col := newCollector(t)
	for _, env := range [][]string{
		nil,
		{"OTEL_SERVICE_NAME=quiet", "OTEL_EXPORTER_OTLP_HEADERS=a=b"}, // no endpoint, no exporter named
		{"OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL, "OTEL_TRACES_EXPORTER=otlp"},
		{"OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_EXPORTER_OTLP_ENDPOINT=" + col.URL},
	} {
		p := runOtelDsh(t, otelConfig(t, nil), otelFreeEnv(append([]string{"ALICE_TOKEN=" + testToken}, env...)...))
		cs, err := connect(t, p.url, testToken, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := callEcho(t, cs, "quiet"); r.IsError {
			t.Fatalf("%v: call: %+v", env, r)
		}
		cs.Close()
		p.stop(t)
		if n := col.requests(); n != 0 {
			t.Errorf("%v: the collector got %d requests", env, n)
		}
		if len(accepted) != 0 {
			t.Errorf("%v: dsh dialled the OTLP default port", env)
		}
	}
}

// A collector that never answers neither slows nor fails a call, and dsh
// still stops within its flush bound.
func TestOtel_HangingCollectorBlocksNoCall(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hung.Close() })
	p := runOtelDsh(t, otelConfig(t, nil), otelFreeEnv("ALICE_TOKEN="+testToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+hung.URL+"/?key=s3cret-query", "OTEL_BSP_SCHEDULE_DELAY=1", "OTEL_METRIC_EXPORT_INTERVAL=1"))
	cs, err := connect(t, p.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if r := callEcho(t, cs, "still served"); r.IsError || resultText(r) != "still served" {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	cs.Close()
	if d := p.stop(t); d > telemetryFlushTimeout+budget/2 {
		t.Errorf("dsh took %v to stop", d)
	}
	if strings.Contains(p.stderr.String(), "s3cret") {
		t.Errorf("dsh's log shows the endpoint's query value:\n%s", p.stderr.String())
	}
}

// With nothing configured startTelemetry makes nothing (no provider, no
// goroutine: goleak checks the package); configured, it exports and
// its shutdown leaves no goroutine behind.
func TestStartTelemetry_OffUnlessConfigured(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	log := zerolog.Nop()
	for _, m := range []map[string]string{
		{},
		{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "prometheus"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
	} {
		tel, err := startTelemetry(context.Background(), env(m), log)
		if err != nil || tel != nil {
			t.Errorf("%v: telemetry %v, %v; want none", m, tel, err)
		}
	}
	for _, m := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "none"},
		{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_TRACES_EXPORTER": "none"},
	} {
		tel, err := startTelemetry(context.Background(), env(m), log)
		if err != nil || tel == nil {
			t.Fatalf("%v: telemetry %v, %v", m, tel, err)
		}
		if (tel.tp != nil) != (m["OTEL_TRACES_EXPORTER"] != "none") || (tel.mp != nil) != (m["OTEL_METRICS_EXPORTER"] == "otlp") {
			t.Errorf("%v: traces %v metrics %v", m, tel.tp != nil, tel.mp != nil)
		}
		tel.shutdown()
	}
}

// The SDK's complaints reach dsh's log without the values that may be
// secrets: header values and endpoint query values.
func TestOtelRedactor_HidesHeaderValuesAndQueryValues(t *testing.T) {
	r := newOtelRedactor(func(k string) string {
		return map[string]string{
			"OTEL_EXPORTER_OTLP_HEADERS":          "api-key=abc%20secret,other=plain-value",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  "https://user:pw@c.example/v1/traces?token=qs3cret",
			"OTEL_EXPORTER_OTLP_METRICS_HEADERS":  "authorization=Bearer%20tok3n",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "",
		}[k]
	})
	got := r.string(`Post "https://user:pw@c.example/v1/traces?token=qs3cret": 401 (abc secret, abc%20secret, plain-value, Bearer tok3n)`)
	for _, secret := range []string{"qs3cret", "abc secret", "abc%20secret", "plain-value", "tok3n", "pw@"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q shows %q", got, secret)
		}
	}
}

// `dsh tools call` exports its call's span too, flushed before it exits.
func TestOtel_ToolsCallExportsItsSpan(t *testing.T) {
	col := newCollector(t)
	cmd := exec.Command(dshBinary(t), "tools", "call", "--config", otelConfig(t, nil), "mcp__t__echo", `{"text":"from the cli"}`)
	cmd.Env = otelFreeEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+col.URL+"/v1/traces", "OTEL_SERVICE_NAME=dsh-cli")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "from the cli") {
		t.Fatalf("dsh tools call: %v\n%s", err, out)
	}
	s, res := col.span(t, "execute_tool mcp__t__echo")
	if a := kvs(s.Attributes); a["dsh.tool.decision"] != "allow" || a["dsh.tool.decision.by"] != "rule" {
		t.Errorf("span attributes %v", a)
	}
	if res["service.name"] != "dsh-cli" {
		t.Errorf("resource %v", res)
	}
	col.mu.Lock()
	metrics := len(col.metrics)
	col.mu.Unlock()
	if metrics != 0 {
		t.Errorf("metrics were exported with only a traces endpoint set")
	}
}

// A caller mapped to a profile has its span explained by that profile's
// rules, not the top-level ones: alice's profile allows the call the
// top-level permissions deny, and the span says allow, by the profile's
// rule.
func TestOtel_SpanDecisionFollowsTheCallersProfile(t *testing.T) {
	col := newCollector(t)
	cfg := otelConfig(t, map[string]any{
		"permissions": map[string]any{"deny": []string{"mcp__t__echo"}},
		"profiles": map[string]any{"ops": map[string]any{
			"match":       []any{map[string]string{"token": "alice"}},
			"permissions": map[string]any{"allow": []string{"mcp__t__echo(text:traced)"}},
		}},
	})
	p := runOtelDsh(t, cfg, otelFreeEnv("ALICE_TOKEN="+testToken, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL))
	cs, err := connect(t, p.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, cs, "traced"); r.IsError || resultText(r) != "traced" {
		t.Fatalf("call: %+v", r)
	}
	cs.Close()
	p.stop(t)
	s, _ := col.span(t, "execute_tool mcp__t__echo")
	a := kvs(s.Attributes)
	if a["dsh.tool.decision"] != "allow" || a["dsh.tool.decision.rule"] != "mcp__t__echo(text:traced)" {
		t.Errorf("span decision %q by rule %q, want allow by the profile's rule (all: %v)", a["dsh.tool.decision"], a["dsh.tool.decision.rule"], a)
	}
}
