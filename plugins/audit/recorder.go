package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
)

// CodeUnavailable is the error code of a call failed closed because its
// entry record could not be written (queue full past its deadline, or
// the store failing).
const CodeUnavailable tools.ErrorCode = "AUDIT_UNAVAILABLE"

// SessionInfo is what the recorder knows of the session a call came from.
type SessionInfo struct {
	Identity string
	Session  string
	Agent    string
}

// Explanation says which permission rule decided a call.
type Explanation struct {
	// Verdict is the rules' verdict: "allow", "deny", "ask".
	Verdict string
	// Rule is the rule's text, or "" when the policy's defaultMode
	// decided.
	Rule string
	// Profile is the permission profile whose rules decided (the dsh
	// gateway's per-identity profiles), or "".
	Profile string
}

// Config configures a [Recorder].
type Config struct {
	// Store is where records go. Nil makes a recorder that keeps no
	// record of its own and only tells Live of each call (which is then
	// required): nothing is written and no call waits for a write.
	Store Store
	// Instance is this gateway's instance id (see [NewID]); Name its
	// human name.
	Instance, Name string
	// Writer bounds the write queue.
	Writer WriterConfig
	// MaxArgBytes bounds the recorded arguments (default 4096);
	// MaxPreviewBytes the result preview (default 512).
	MaxArgBytes, MaxPreviewBytes int
	// Redact adds argument-name patterns to [DefaultRedactKeys].
	Redact []string
	// Session maps a call's agent scope to its session (nil: the scope
	// is the session and the agent).
	Session func(agent host.ScopeKey) SessionInfo
	// Explain, when set, names the permission rule behind a call's
	// pre-execute decision.
	Explain func(e *tools.Execution) Explanation
	// Live, when set, is told of each call as it begins, passes each
	// stage and ends (a copy of the record so far); it must not block.
	Live func(Event)
	// Logger receives errors (nil: none).
	Logger *zerolog.Logger
}

// Event is a live update of a call's record.
type Event struct {
	// Kind is "begin", "stage" or "end".
	Kind string `json:"kind"`
	Call Call   `json:"call"`
}

// Recorder records every call of a registry: once when it enters the
// pipeline (before any policy decides: an entry record that survives a
// crash mid-call as an unfinished call) and once when its result is final
// (tools/result). It is a [tools.Tracer] (stage timings and decisions)
// plus a tools/pre-execute listener registered first, which writes the
// entry record and waits for it before the policy's decision takes
// effect: a call whose entry record cannot be written is failed closed
// with [CodeUnavailable], never run unrecorded.
type Recorder struct {
	cfg   Config
	red   *Redactor
	w     *writer // nil: no store (Live only)
	log   *zerolog.Logger
	close sync.Once
}

// NewRecorder starts a recorder for cfg; [Recorder.Install] attaches it
// to a registry and [Recorder.Close] writes what is queued and stops.
func NewRecorder(cfg Config) (*Recorder, error) {
	if cfg.Store == nil && cfg.Live == nil {
		return nil, fmt.Errorf("audit: recorder without a store or a Live function")
	}
	if cfg.Instance == "" {
		cfg.Instance = NewID()
	}
	if cfg.MaxArgBytes == 0 {
		cfg.MaxArgBytes = 4096
	}
	if cfg.MaxPreviewBytes == 0 {
		cfg.MaxPreviewBytes = 512
	}
	red, err := NewRedactor(cfg.Redact)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		nop := zerolog.Nop()
		log = &nop
	}
	if cfg.Store == nil {
		return &Recorder{cfg: cfg, red: red, log: log}, nil
	}
	if cfg.Writer.Writers == 0 && cfg.Store.Kind() == "postgres" {
		cfg.Writer.Writers = 4
	}
	if s, ok := cfg.Store.(*sqlStore); ok && s.path != "" && cfg.Writer.Journal == "" {
		cfg.Writer.Journal = JournalPath(s.path, cfg.Instance)
	}
	w, err := newWriter(cfg.Store, cfg.Writer, log)
	if err != nil {
		return nil, err
	}
	return &Recorder{cfg: cfg, red: red, w: w, log: log}, nil
}

// Redactor returns the recorder's redactor.
func (r *Recorder) Redactor() *Redactor { return r.red }

// Instance returns the recorder's instance id.
func (r *Recorder) Instance() string { return r.cfg.Instance }

// Stats returns the records written and those that could not be.
func (r *Recorder) Stats() (written, failed int64) {
	if r.w == nil {
		return 0, 0
	}
	return r.w.Written.Load(), r.w.Failed.Load()
}

// Install registers the recorder on reg through c: its tracer and its
// tools/pre-execute listener (prepended, so it runs before every policy
// listener). Both go when c's fiber is disposed.
func (r *Recorder) Install(c *host.Context, reg *tools.Registry) error {
	if _, err := reg.Trace(c, tracer{r}); err != nil {
		return err
	}
	_, err := host.OnWaterfall(c, tools.PreExecute, r.preExecute, host.Prepend())
	return err
}

// Close writes what is queued and stops the writer. Calls still running
// keep their entry records, unfinished.
func (r *Recorder) Close() error {
	if r.w != nil {
		r.close.Do(r.w.close)
	}
	return nil
}

// NewID returns a random 16-hex-digit id.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type recKey struct{}

// callRec is one call's record while it runs.
type callRec struct {
	r  *Recorder
	t0 time.Time

	raw []byte // the call's arguments as given

	mu       sync.Mutex
	c        Call
	entered  bool
	approver string
	channel  string
}

// FromContext returns the record of the call whose stage runs under ctx,
// for an approver to say who answered ([SetApprover]); nil outside a
// recorded call.
func fromContext(ctx context.Context) *callRec {
	rec, _ := ctx.Value(recKey{}).(*callRec)
	return rec
}

// SetApprover records who answered the ask of the call whose approval
// stage runs under ctx, and through which channel ("client", "console",
// "always", "none"). Outside a recorded call it does nothing.
func SetApprover(ctx context.Context, approver, channel string) {
	if rec := fromContext(ctx); rec != nil {
		rec.mu.Lock()
		rec.approver, rec.channel = approver, channel
		rec.mu.Unlock()
	}
}

// RecordID returns the audit record id of the call running under ctx,
// or "".
func RecordID(ctx context.Context) string {
	if rec := fromContext(ctx); rec != nil {
		return rec.c.ID // set at StartCall, never changed
	}
	return ""
}

func (rec *callRec) snapshot() Call {
	c := rec.c
	c.Decisions = append([]Decision(nil), c.Decisions...)
	c.Stages = append([]Stage(nil), c.Stages...)
	return c
}

func (rec *callRec) live(kind string) {
	if f := rec.r.cfg.Live; f != nil {
		rec.mu.Lock()
		c := rec.snapshot()
		rec.mu.Unlock()
		f(Event{Kind: kind, Call: c})
	}
}

type tracer struct{ r *Recorder }

func (t tracer) StartCall(call tools.Call) tools.CallTrace {
	r := t.r
	now := time.Now()
	rec := &callRec{r: r, t0: now}
	rec.c = Call{ID: NewID(), Instance: r.cfg.Instance, Started: now.UTC(), Tool: call.Name, CallID: call.ID}
	if r.cfg.Session != nil && call.Agent != "" {
		si := r.cfg.Session(call.Agent)
		rec.c.Identity, rec.c.Session, rec.c.Agent = si.Identity, si.Session, si.Agent
	} else {
		rec.c.Session, rec.c.Agent = string(call.Agent), string(call.Agent)
	}
	rec.raw = call.Arguments // redacted once: at pre-execute, or at End for a call rejected before it
	return rec
}

func (rec *callRec) BeginStage(ctx context.Context, exec *tools.Execution, stage string) (context.Context, func(tools.StageEnd)) {
	start := time.Now()
	return context.WithValue(ctx, recKey{}, rec), func(end tools.StageEnd) {
		st := Stage{Name: stage, Start: start.Sub(rec.t0), Duration: time.Since(start), Outcome: end.Outcome}
		if end.Error != nil {
			st.Code = string(end.Error.Code)
		}
		rec.mu.Lock()
		rec.c.Stages = append(rec.c.Stages, st)
		switch stage {
		case tools.TraceApproval:
			d := Decision{Stage: stage, Outcome: end.Outcome, By: "approver", Approver: rec.approver, Channel: rec.channel}
			if end.Error != nil {
				d.Outcome, d.Code = string(tools.ApprovalOutcomeOf(end.Error.Code)), string(end.Error.Code)
			}
			if d.Channel == "" {
				d.Channel = "none"
			}
			rec.c.Decisions = append(rec.c.Decisions, d)
		case tools.TraceGuards:
			if end.Error != nil {
				rec.c.Decisions = append(rec.c.Decisions, Decision{Stage: stage, Outcome: "deny", By: "guard", Code: string(end.Error.Code)})
			}
		case tools.TracePostExecute:
			if end.Outcome == string(tools.Block) {
				rec.c.Decisions = append(rec.c.Decisions, Decision{Stage: stage, Outcome: "block", By: "post-execute"})
			}
		}
		rec.mu.Unlock()
		rec.live("stage")
	}
}

func (rec *callRec) End(_ context.Context, _ *tools.Execution, res tools.Result) {
	r := rec.r
	now := time.Now()
	rec.mu.Lock()
	c := &rec.c
	c.Finished, c.Duration = now.UTC(), now.Sub(rec.t0)
	c.IsError = res.IsError
	if res.IsError && res.Error != nil {
		c.Code = string(res.Error.Code)
	}
	size, preview := 0, ""
	for _, b := range res.Content {
		size += len(b.Text) + len(b.Data) + len(b.URI)
		if preview == "" && b.Text != "" {
			preview = b.Text
		}
	}
	c.ResultSize = size
	c.Preview, _ = Cut(Text(preview), r.cfg.MaxPreviewBytes)
	if !rec.entered {
		c.Args, c.ArgsTruncated = r.red.Args(rec.raw, r.cfg.MaxArgBytes)
	}
	final := rec.snapshot()
	rec.mu.Unlock()
	// A call rejected before pre-execute (INVALID_ARGS) has no entry
	// record: this is its one record.
	if r.w != nil {
		r.w.enqueueFinal(final)
	}
	rec.live("end")
}

// preExecute writes the call's entry record, then lets the policy decide,
// records the decision and who took it, and waits until the entry record
// is written before the decision takes effect (overlapping the write with
// the policy's work).
func (r *Recorder) preExecute(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
	rec := fromContext(ctx)
	if rec == nil || rec.r != r {
		return next(ctx)
	}
	rec.mu.Lock()
	rec.c.Args, rec.c.ArgsTruncated = r.red.Args(e.Args(), r.cfg.MaxArgBytes)
	rec.entered = true
	entry := rec.snapshot()
	rec.mu.Unlock()
	var done <-chan error
	if r.w != nil {
		var err error
		if done, err = r.w.enqueueEntry(ctx, entry); err != nil {
			return r.failClosed(rec, err)
		}
	}
	rec.live("begin")
	dec, derr := next(ctx)
	d := Decision{Stage: tools.TracePreExecute, Outcome: string(dec.Kind), By: "policy"}
	if derr != nil {
		d.Outcome, d.By, d.Reason = "error", "listener", bound(safeerr.Text(derr))
	} else {
		d.Reason = bound(dec.Reason)
		if r.cfg.Explain != nil {
			x := r.cfg.Explain(e)
			d.Profile = x.Profile
			if x.Verdict == string(dec.Kind) {
				d.Rule = x.Rule
				if x.Rule != "" {
					d.By = "rule"
				} else {
					d.By = "default"
				}
			}
		}
	}
	rec.mu.Lock()
	rec.c.Decisions = append(rec.c.Decisions, d)
	rec.mu.Unlock()
	if done == nil {
		return dec, derr
	}
	timer := time.NewTimer(r.w.cfg.BlockTimeout)
	defer timer.Stop()
	select {
	case werr := <-done:
		if werr != nil {
			return r.failClosed(rec, werr)
		}
	case <-timer.C:
		return r.failClosed(rec, fmt.Errorf("the entry record was not written within %v", r.w.cfg.BlockTimeout))
	case <-ctx.Done():
		return tools.PreDecision{}, context.Cause(ctx)
	}
	return dec, derr
}

func (r *Recorder) failClosed(rec *callRec, err error) (tools.PreDecision, error) {
	msg := "the call is not recorded in the audit store, so it does not run: " + safeerr.Text(err)
	r.log.Error().Str("tool", rec.c.Tool).Str("record", rec.c.ID).Msg("audit: " + msg)
	rec.mu.Lock()
	rec.c.Decisions = append(rec.c.Decisions, Decision{Stage: "audit", Outcome: "deny", By: "audit", Code: string(CodeUnavailable), Reason: bound(msg)})
	rec.mu.Unlock()
	return tools.PreDecision{}, tools.NewError(CodeUnavailable, "AuditUnavailable", msg)
}

func bound(s string) string {
	s, _ = Cut(s, 512)
	return s
}
