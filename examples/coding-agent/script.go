package main

import (
	"encoding/json"
	"fmt"
)

// Script is a replayable model: the assistant turns of a session, each with
// its text and tool calls, played back in order regardless of what the
// tools return. It stands in for an LLM so that the session runs offline,
// with no keys, and the same way every time.
type Script struct {
	Agent string `json:"agent"`
	Turns []Turn `json:"turns"`
}

// Turn is one assistant message.
type Turn struct {
	// Mode, when set, switches the tool registry's mode before the turn
	// ("native", "code" or "both").
	Mode  string       `json:"mode,omitempty"`
	Say   string       `json:"say"`
	Calls []ScriptCall `json:"calls,omitempty"`
}

// ScriptCall is one tool call the model makes.
type ScriptCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// parseScript decodes and checks a script.
func parseScript(b []byte) (*Script, error) {
	var s Script
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if s.Agent == "" {
		return nil, fmt.Errorf("script: no agent")
	}
	seen := map[string]bool{}
	for i, t := range s.Turns {
		for j, c := range t.Calls {
			if c.ID == "" || c.Name == "" {
				return nil, fmt.Errorf("script: turn %d call %d: id and name are required", i+1, j+1)
			}
			if seen[c.ID] {
				return nil, fmt.Errorf("script: turn %d: duplicate call id %q", i+1, c.ID)
			}
			seen[c.ID] = true
		}
	}
	return &s, nil
}
