package main

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Event is one line of the session log (JSONL).
type Event struct {
	Seq    int             `json:"seq"`
	Type   string          `json:"type"`
	ID     string          `json:"id,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Time   string          `json:"time,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	Parent string          `json:"parent,omitempty"`
}

// sessionLog appends events to a writer as JSON lines. Safe for concurrent
// use.
type sessionLog struct {
	mu     sync.Mutex
	w      io.Writer
	seq    int
	events []Event
	now    func() time.Time
}

// Append implements tools.SessionLog: the registry records each Code Mode
// sub-call here as a tool/code-dispatch event, inside the open turn.
func (l *sessionLog) Append(_ context.Context, e tools.SessionEvent) error {
	return l.appendRaw(e.Type, e.ID, string(e.Agent), e.Parent, e.Data)
}

var _ tools.SessionLog = (*sessionLog)(nil)

func (l *sessionLog) append(typ, id, agent, parent string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return l.appendRaw(typ, id, agent, parent, raw)
}

func (l *sessionLog) appendRaw(typ, id, agent, parent string, raw json.RawMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e := Event{Seq: l.seq, Type: typ, ID: id, Agent: agent, Parent: parent, Data: raw}
	if l.now != nil {
		e.Time = l.now().UTC().Format(time.RFC3339Nano)
	}
	l.events = append(l.events, e)
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = l.w.Write(append(line, '\n'))
	return err
}
