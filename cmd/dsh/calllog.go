package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/audit"
)

// callLogQueue bounds the lines waiting to be written: a call never waits
// for the log; when the file falls this far behind, lines are dropped and
// counted (the count is logged at exit).
const callLogQueue = 4096

// callLog writes one JSON line per finished call (dsh.json "callLog"),
// fed by the audit recorder's end-of-call events: the same record, with
// the same decisions and who took them, as the audit store keeps.
type callLog struct {
	cfg dshconfig.CallLog
	w   io.Writer
	f   *os.File // nil: w is standard error
	log zerolog.Logger

	lines   chan []byte
	done    chan struct{}
	closing sync.Once
	mu      sync.Mutex // guards closed and sends on lines
	closed  bool
	dropped int
}

// callLine is one line of the call log.
type callLine struct {
	// Time is when the call entered the pipeline (UTC).
	Time     time.Time `json:"time"`
	Identity string    `json:"identity,omitempty"`
	Session  string    `json:"session,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	Tool     string    `json:"tool"`
	CallID   string    `json:"callId,omitempty"`
	// Decision is the last policy decision taken on the call (see
	// audit.Decision): allow, deny, ask, allowed-once, rejected, block...;
	// By who took it (rule, default, policy, approver, guard,
	// post-execute, audit), with the rule, or the approver and channel.
	Decision string `json:"decision,omitempty"`
	By       string `json:"by,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Approver string `json:"approver,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// Code is the result's error code ("" for a success).
	Code       string  `json:"code,omitempty"`
	IsError    bool    `json:"isError,omitempty"`
	DurationMS float64 `json:"durationMs"`
	// Arguments are the call's arguments, redacted and cut (only with
	// "arguments": true).
	Arguments          *string `json:"arguments,omitempty"`
	ArgumentsTruncated bool    `json:"argumentsTruncated,omitempty"`
	// Decisions are all the decisions, in order, when there was more
	// than one (an ask and its answer).
	Decisions []audit.Decision `json:"decisions,omitempty"`
}

// openCallLog opens the call log cfg configures (nil when none): the file
// is created (mode 0600) or appended to.
func openCallLog(cfg *dshconfig.Config, stderr io.Writer, log zerolog.Logger) (*callLog, error) {
	c := cfg.CallLog
	if c == nil {
		return nil, nil
	}
	l := &callLog{cfg: *c, w: stderr, log: log, lines: make(chan []byte, callLogQueue), done: make(chan struct{})}
	if c.Path != "-" {
		f, err := os.OpenFile(c.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, &dshconfig.Error{File: cfg.File, Key: "callLog.path", Msg: err.Error()}
		}
		l.f, l.w = f, f
	}
	go l.run()
	return l, nil
}

// run writes the queued lines until Close.
func (l *callLog) run() {
	defer close(l.done)
	failed := false
	for b := range l.lines {
		if _, err := l.w.Write(b); err != nil && !failed {
			failed = true // logged once: a full disk would repeat it per call
			l.log.Error().Err(err).Msg("call log: writing")
		}
	}
}

// line is the log line of a finished call.
func (l *callLog) line(c audit.Call) []byte {
	ln := callLine{Time: c.Started, Identity: c.Identity, Session: c.Session, Agent: c.Agent, Tool: c.Tool, CallID: c.CallID,
		Code: c.Code, IsError: c.IsError, DurationMS: float64(c.Duration.Microseconds()) / 1000}
	if n := len(c.Decisions); n > 0 {
		d := c.Decisions[n-1]
		ln.Decision, ln.By, ln.Rule, ln.Approver, ln.Channel = d.Outcome, d.By, d.Rule, d.Approver, d.Channel
		if n > 1 {
			ln.Decisions = c.Decisions
		}
	}
	if l.cfg.Arguments {
		args, cut := audit.Cut(c.Args, l.cfg.MaxArgumentBytes)
		ln.Arguments, ln.ArgumentsTruncated = &args, cut || c.ArgsTruncated
	}
	b, err := json.Marshal(ln)
	if err != nil { // only strings, numbers and times: cannot happen
		b = []byte(fmt.Sprintf(`{"time":%q,"error":"the call's line could not be encoded"}`, c.Started.Format(time.RFC3339Nano)))
	}
	return append(b, '\n')
}

// event is the recorder's Live function: it queues the line of each
// finished call, or drops it when the queue is full. It never blocks.
func (l *callLog) event(e audit.Event) {
	if e.Kind != "end" {
		return
	}
	b := l.line(e.Call)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	select {
	case l.lines <- b:
	default:
		l.dropped++
	}
}

// Close writes the queued lines and closes the file.
func (l *callLog) Close() error {
	if l == nil {
		return nil
	}
	var err error
	l.closing.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.lines)
		dropped := l.dropped
		l.mu.Unlock()
		<-l.done
		if dropped > 0 {
			l.log.Warn().Int("dropped", dropped).Msg("call log: lines dropped (the log fell behind)")
		}
		if l.f != nil {
			err = l.f.Close()
		}
	})
	return err
}

// startRecording is the recording of a gateway that keeps no audit store
// but logs calls or exports telemetry: the sessions' identities (for the
// call log and the spans) and, with a call log, a recorder that keeps no
// record of its own and feeds the log.
func startRecording(g *gateway, cfg *dshconfig.Config, cl *callLog, log zerolog.Logger) (*auditing, error) {
	au := &auditing{instance: audit.NewID(), sessions: map[host.ScopeKey]audit.SessionInfo{}}
	if cl == nil {
		return au, nil
	}
	rec, err := audit.NewRecorder(audit.Config{
		Instance: au.instance, MaxArgBytes: cl.cfg.MaxArgumentBytes, Redact: cl.cfg.Redact,
		Session: au.session, Explain: explainer(g), Live: cl.event, Logger: &log,
	})
	if err != nil {
		return nil, &dshconfig.Error{File: cfg.File, Key: "callLog", Msg: err.Error()}
	}
	au.rec = rec
	if err := rec.Install(g.root, g.reg); err != nil {
		au.Close()
		return nil, err
	}
	return au, nil
}

// recordingFor starts what records g's calls: the audit store when cfg or
// the flags ask for it (feeding the call log too), else the light
// recording of startRecording when there is a call log or telemetry, else
// nothing (nil).
func recordingFor(ctx context.Context, g *gateway, cfg *dshconfig.Config, audited bool, cl *callLog, tel *telemetry, log zerolog.Logger) (*auditing, error) {
	switch {
	case audited:
		return startAuditing(ctx, g, cfg, log, cl)
	case cl != nil || tel != nil:
		return startRecording(g, cfg, cl, log)
	}
	return nil, nil
}
