package audit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// InboxConfig configures an [Inbox].
type InboxConfig struct {
	// Store holds the pending asks. Required.
	Store Store
	// Instance is this gateway's instance id, registered in the store as
	// alive while the inbox runs.
	Instance, Name string
	// Timeout bounds how long an ask waits for an answer (0: as long as
	// the call).
	Timeout time.Duration
	// Redactor hides secrets in the stored arguments (nil: the
	// defaults); MaxArgBytes bounds them (default 16384).
	Redactor    *Redactor
	MaxArgBytes int
	// Session maps the asking agent scope to its session.
	Session func(agent host.ScopeKey) SessionInfo
	// Rule names the permission rule that asked, if known.
	Rule func(req tools.ApprovalRequest) string
	// Poll is how often a waiting ask looks at the store besides the
	// notifications (default 1s): the fallback when a notification is
	// lost, and how SQLite instances sharing a file hear each other.
	Poll time.Duration
	// MaxGrants bounds the standing "always for this session" grants
	// (default 10000); past it, "always" allows once.
	MaxGrants int
	Logger    *zerolog.Logger
}

// Inbox is the console's approval channel: a [tools.Approver] that stores
// each ask (so it survives a page reload, and any console sharing the
// store sees it), waits for a person's answer given in a console
// ([Store.AnswerAsk], from any instance), and applies it exactly once,
// only while the caller still waits. The answer's fate is stored: applied,
// or late (the caller had stopped waiting: nothing granted). Asks of a
// gateway that stopped are abandoned, never granted: only the waiting
// caller can act on an answer.
//
// "always" allows the call and every later call of the same tool from
// the same session and identity without asking; "allow" allows once;
// "reject" rejects.
type Inbox struct {
	cfg   InboxConfig
	svc   *approval.Service
	red   *Redactor
	log   *zerolog.Logger
	unsub func()

	mu      sync.Mutex
	waiting map[string]chan struct{}
	grants  map[grantKey]string
}

type grantKey struct {
	agent    host.ScopeKey
	identity string
	tool     string
}

// NewInbox starts an inbox on cfg.Store and registers cfg.Instance there
// as alive.
func NewInbox(ctx context.Context, cfg InboxConfig) (*Inbox, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("audit: inbox without a store")
	}
	if cfg.Instance == "" {
		cfg.Instance = NewID()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.MaxArgBytes <= 0 {
		cfg.MaxArgBytes = 16384
	}
	if cfg.MaxGrants <= 0 {
		cfg.MaxGrants = 10000
	}
	in := &Inbox{cfg: cfg, red: cfg.Redactor, waiting: map[string]chan struct{}{}, grants: map[grantKey]string{}}
	if in.red == nil {
		in.red, _ = NewRedactor(nil)
	}
	in.log = cfg.Logger
	if in.log == nil {
		nop := zerolog.Nop()
		in.log = &nop
	}
	if err := cfg.Store.Register(ctx, cfg.Instance, cfg.Name); err != nil {
		return nil, err
	}
	svc, err := approval.New(approval.Config{Answerer: approval.Handoff(in.handle), Timeout: cfg.Timeout}, in.log)
	if err != nil {
		return nil, err
	}
	in.svc = svc
	in.unsub = cfg.Store.Subscribe(in.notice)
	return in, nil
}

// Instance returns the inbox's instance id.
func (in *Inbox) Instance() string { return in.cfg.Instance }

// Close withdraws the asks still waiting (their calls are denied as
// unavailable) and stops the inbox.
func (in *Inbox) Close() error {
	in.unsub()
	return in.svc.Close()
}

func (in *Inbox) notice(n Notice) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if n.Kind == "ask" {
		if ch, ok := in.waiting[n.ID]; ok {
			poke(ch)
		}
		return
	}
	if n.Kind == "resync" {
		for _, ch := range in.waiting {
			poke(ch)
		}
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Approve implements [tools.Approver]: a standing grant answers at once;
// any other ask is stored and waits for a console's answer.
func (in *Inbox) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	key := in.grantKey(req)
	in.mu.Lock()
	by, ok := in.grants[key]
	in.mu.Unlock()
	if ok {
		SetApprover(ctx, by, "always")
		return tools.AllowedOnce, nil
	}
	SetApprover(ctx, "", "console")
	return in.svc.Approve(ctx, req)
}

func (in *Inbox) grantKey(req tools.ApprovalRequest) grantKey {
	k := grantKey{agent: req.Agent, tool: req.Tool}
	if in.cfg.Session != nil {
		k.identity = in.cfg.Session(req.Agent).Identity
	}
	return k
}

// handle stores the ask and waits for its answer or its withdrawal.
func (in *Inbox) handle(ctx context.Context, p *approval.Pending) {
	req := p.Request
	now := time.Now()
	a := Ask{ID: NewID(), Call: RecordID(ctx), Instance: in.cfg.Instance, Created: now.UTC(), Tool: req.Tool,
		Session: string(req.Agent), Agent: string(req.Agent), Reason: bound(req.Reason)}
	if dl, ok := ctx.Deadline(); ok {
		a.Deadline = dl.UTC()
	}
	if in.cfg.Session != nil {
		si := in.cfg.Session(req.Agent)
		a.Identity, a.Session, a.Agent = si.Identity, si.Session, si.Agent
	}
	if in.cfg.Rule != nil {
		a.Rule = in.cfg.Rule(req)
	}
	var args []byte
	if req.Execution != nil {
		args = req.Execution.Args()
	}
	a.Args, _ = in.red.Args(args, in.cfg.MaxArgBytes)
	if req.Call != nil {
		a.Card = cardtext.Call(req.Tool, []byte(a.Args), req.Call)
	} else {
		a.Card = cardtext.Call(req.Tool, []byte(a.Args), nil)
	}
	a.Card, _ = Cut(a.Card, 64<<10)

	wake := make(chan struct{}, 1)
	in.mu.Lock()
	in.waiting[a.ID] = wake
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.waiting, a.ID)
		in.mu.Unlock()
	}()
	bg := context.WithoutCancel(ctx)
	if err := in.cfg.Store.PutAsk(bg, a); err != nil {
		in.log.Error().Str("tool", a.Tool).Msg("audit: the ask could not be stored; the call is not approved: " + safeerr.Text(err))
		_ = p.Respond(tools.Unavailable)
		return
	}
	tick := time.NewTicker(in.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-p.Done():
			// Withdrawn (cancelled, deadline, closed) or answered below.
			if w, _ := p.Withdrawn(); w {
				if ok, _ := in.cfg.Store.Transition(bg, a.ID, []AskState{AskPending}, AskWithdrawn); !ok {
					_, _ = in.cfg.Store.Transition(bg, a.ID, []AskState{AskAnswered}, AskLate)
				}
			}
			return
		case <-wake:
		case <-tick.C:
		}
		cur, err := in.cfg.Store.Ask(bg, a.ID)
		if err != nil {
			continue
		}
		switch cur.State {
		case AskPending:
			continue
		case AskAnswered:
			in.apply(ctx, bg, p, cur)
			return
		default:
			// Abandoned by a sweep that took this instance for gone, or
			// moved on by hand: never granted.
			_ = p.Respond(tools.Unavailable)
			return
		}
	}
}

// apply applies an answer once: the caller still waits (Respond took it)
// → applied; else late, and nothing is granted.
func (in *Inbox) apply(ctx, bg context.Context, p *approval.Pending, a Ask) {
	o := tools.Rejected
	if a.Answer == AnswerAllow || a.Answer == AnswerAlways {
		o = tools.AllowedOnce
	}
	SetApprover(ctx, a.AnsweredBy, "console")
	if err := p.Respond(o); err != nil {
		_, _ = in.cfg.Store.Transition(bg, a.ID, []AskState{AskAnswered}, AskLate)
		in.log.Info().Str("ask", a.ID).Msg("audit: console answer came after the caller stopped waiting; not applied")
		return
	}
	if a.Answer == AnswerAlways {
		key := in.grantKey(p.Request)
		in.mu.Lock()
		if len(in.grants) < in.cfg.MaxGrants {
			in.grants[key] = a.AnsweredBy
		}
		in.mu.Unlock()
	}
	_, _ = in.cfg.Store.Transition(bg, a.ID, []AskState{AskAnswered}, AskApplied)
}

// ForgetSession drops the standing grants of a session that ended.
func (in *Inbox) ForgetSession(agent host.ScopeKey) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for k := range in.grants {
		if k.agent == agent {
			delete(in.grants, k)
		}
	}
}
