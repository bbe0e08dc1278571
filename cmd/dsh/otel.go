package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/dsh-go/dsh/internal/redact"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/audit"
	toolotel "github.com/dsh-go/dsh/plugins/otel"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// telemetryFlushTimeout bounds the flush of spans and metrics when dsh
// stops: an unreachable collector delays the exit by at most this.
const telemetryFlushTimeout = 5 * time.Second

// telemetry is the OpenTelemetry export of one dsh run, made from the
// standard OTEL_* environment variables (see startTelemetry). A nil
// *telemetry is off: no exporter, no goroutine, no connection.
type telemetry struct {
	tp  *sdktrace.TracerProvider // nil: traces off
	mp  *sdkmetric.MeterProvider // nil: metrics off
	log zerolog.Logger
	red *otelRedactor
}

// otelSignal reports whether the signal ("TRACES", "METRICS") is to be
// exported over OTLP/HTTP, by OTEL_<signal>_EXPORTER and the endpoint
// variables; a reason, when it is off for a setting dsh does not
// support, to warn about. Unlike the SDK's own default ("otlp" to
// localhost), an unset exporter exports only when an endpoint is set: dsh
// sends nothing anywhere unless told where.
func otelSignal(getenv func(string) string, signal string) (on bool, warn string) {
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER")))
	switch exporter {
	case "none":
		return false, ""
	case "otlp":
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") == "" {
			return false, ""
		}
	default:
		// Not echoed whole: only a short, cleaned value.
		v, _ := audit.Cut(audit.Text(exporter), 32)
		return false, fmt.Sprintf("OTEL_%s_EXPORTER=%q is not supported (dsh exports \"otlp\" over HTTP, or \"none\"); %s are not exported", signal, v, strings.ToLower(signal))
	}
	proto := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	if proto == "" {
		proto, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	if p := strings.TrimSpace(proto); p != "" && p != "http/protobuf" {
		v, _ := audit.Cut(audit.Text(p), 32)
		return false, fmt.Sprintf("%s=%q is not supported (dsh exports OTLP as \"http/protobuf\"); %s are not exported", name, v, strings.ToLower(signal))
	}
	return true, ""
}

// startTelemetry makes the trace and meter providers the environment
// asks for: none (a nil *telemetry) when OTEL_SDK_DISABLED is "true" or
// neither signal is configured (see otelSignal). The OTLP/HTTP exporters
// read the endpoint, headers, timeout, compression and TLS settings from
// the OTEL_EXPORTER_OTLP_* variables themselves; the resource is
// service.name "dsh" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// say otherwise. Export errors are logged, rate-limited and with URLs
// redacted; they never fail a call.
func startTelemetry(ctx context.Context, getenv func(string) string, log zerolog.Logger) (*telemetry, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	red := newOtelRedactor(getenv)
	traces, w1 := otelSignal(getenv, "TRACES")
	metrics, w2 := otelSignal(getenv, "METRICS")
	for _, w := range []string{w1, w2} {
		if w != "" {
			log.Warn().Msg("otel: " + w)
		}
	}
	if !traces && !metrics {
		return nil, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("dsh"), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: they win
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("otel: the resource: %s", red.text(err))
	}
	if err != nil { // a partial resource: a malformed OTEL_RESOURCE_ATTRIBUTES entry
		log.Warn().Msg("otel: the resource: " + red.text(err))
	}
	// Before the exporters read the environment: their complaints about
	// it go through the sink, values left out.
	otel.SetLogger(logr.New(otelLogSink{log: log}))
	otel.SetErrorHandler(newOtelErrorLog(log, red))
	t := &telemetry{log: log, red: red}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("otel: the trace exporter: %s", red.text(err))
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			t.shutdown()
			return nil, fmt.Errorf("otel: the metric exporter: %s", red.text(err))
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
	}
	return t, nil
}

// instrument records the calls of g's registry through t (nothing when t
// is nil): a span per call, with the identity and session au knows for
// its agent and the permission rule that decided, and the call metrics.
// It goes when g closes.
func (t *telemetry) instrument(g *gateway, au *auditing) error {
	if t == nil {
		return nil
	}
	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if t.tp != nil {
		tp = t.tp
	}
	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	if t.mp != nil {
		mp = t.mp
	}
	cfg := toolotel.Config{
		TracerProvider: tp, MeterProvider: mp,
		Explain: func(e *tools.Execution) (string, string) {
			pol, _ := g.policyOf(e.Agent())
			if pol == nil { // the caller resolves to no profile: every stage denies
				return string(permissions.Deny), ""
			}
			d := pol.Decide(e.Name(), e.Args())
			return string(d.Verdict), d.Rule
		},
	}
	if au != nil {
		cfg.Attributes = func(c tools.Call) []attribute.KeyValue {
			if c.Agent == "" {
				return nil
			}
			si := au.session(c.Agent)
			kv := make([]attribute.KeyValue, 0, 2)
			if si.Identity != "" {
				kv = append(kv, attribute.String(toolotel.AttrIdentity, si.Identity))
			}
			return append(kv, attribute.String(toolotel.AttrSession, si.Session))
		}
	}
	ins, err := toolotel.New(cfg)
	if err != nil {
		return err
	}
	_, err = g.reg.Trace(g.root, ins)
	return err
}

// shutdown flushes what is buffered and stops the exporters, waiting at
// most telemetryFlushTimeout.
func (t *telemetry) shutdown() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		t.log.Warn().Msg("otel: flushing at exit: " + t.red.text(err))
	}
}

// otelErrorLog logs the SDK's errors (a failed export, a dropped batch)
// at warn level, redacted, at most one a minute (with the count of those
// left out).
type otelErrorLog struct {
	log zerolog.Logger
	red *otelRedactor
	now func() time.Time

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func newOtelErrorLog(log zerolog.Logger, red *otelRedactor) *otelErrorLog {
	return &otelErrorLog{log: log, red: red, now: time.Now}
}

// Handle implements otel.ErrorHandler.
func (l *otelErrorLog) Handle(err error) {
	now := l.now()
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < time.Minute {
		l.dropped++
		l.mu.Unlock()
		return
	}
	n := l.dropped
	l.last, l.dropped = now, 0
	l.mu.Unlock()
	e := l.log.Warn()
	if n > 0 {
		e = e.Int("suppressed", n)
	}
	e.Msg("otel: " + l.red.text(err))
}

// otelRedactor hides the secrets the OTEL_* variables hold in a text the
// SDK produced: the user info and query values of URLs (the configured
// endpoints among them, quoted or not) and the header values.
type otelRedactor struct {
	endpoints []string
	values    []string
}

func newOtelRedactor(getenv func(string) string) *otelRedactor {
	r := &otelRedactor{}
	for _, sig := range []string{"", "TRACES_", "METRICS_"} {
		if e := getenv("OTEL_EXPORTER_OTLP_" + sig + "ENDPOINT"); e != "" {
			r.endpoints = append(r.endpoints, e)
		}
		for _, h := range strings.Split(getenv("OTEL_EXPORTER_OTLP_"+sig+"HEADERS"), ",") {
			_, v, ok := strings.Cut(h, "=")
			if v = strings.TrimSpace(v); !ok || v == "" {
				continue
			}
			r.values = append(r.values, v)
			if u, err := url.PathUnescape(v); err == nil && u != v {
				r.values = append(r.values, u)
			}
		}
	}
	return r
}

// text is err's text, redacted and bounded.
func (r *otelRedactor) text(err error) string { return r.string(safeerr.Text(err)) }

func (r *otelRedactor) string(s string) string {
	for _, e := range r.endpoints {
		s = redact.In(s, e)
	}
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, "***")
	}
	s, _ = audit.Cut(audit.Text(s), 1024)
	return s
}

// otelLogSink is the SDK's logger (otel.SetLogger): its errors and
// warnings go to dsh's log at warn level with their message and the
// names of their values, never the values (a malformed header's value,
// an endpoint with a token in its query) nor the error's text, which may
// quote them. Info and debug messages go at debug level (-v), likewise.
type otelLogSink struct {
	log zerolog.Logger
}

func (s otelLogSink) Init(logr.RuntimeInfo) {}
func (s otelLogSink) Enabled(level int) bool {
	return level <= 1 || s.log.GetLevel() <= zerolog.DebugLevel
}
func (s otelLogSink) Info(level int, msg string, kv ...any) {
	e := s.log.Debug()
	if level <= 1 { // the SDK's warnings are V(1)
		e = s.log.Warn()
	}
	e.Strs("values", keysOf(kv)).Msg("otel: " + msg)
}
func (s otelLogSink) Error(_ error, msg string, kv ...any) {
	s.log.Warn().Strs("values", keysOf(kv)).Msg("otel: " + msg + " (details not shown: they may hold a secret)")
}
func (s otelLogSink) WithValues(...any) logr.LogSink { return s }
func (s otelLogSink) WithName(string) logr.LogSink   { return s }

// keysOf returns the keys of a logr key/value list, cleaned and bounded.
func keysOf(kv []any) []string {
	var out []string
	for i := 0; i < len(kv) && len(out) < 8; i += 2 {
		k, _ := kv[i].(string)
		k, _ = audit.Cut(k, 64)
		out = append(out, k)
	}
	return out
}
