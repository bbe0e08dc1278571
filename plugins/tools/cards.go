package tools

import (
	"encoding/json"
)

// The card kinds of [CallView] and [ResultView], written as the "card" tag.
const (
	CardGeneric  = "generic"
	CardTerminal = "terminal"
	CardDiff     = "diff"
)

// CallView is a tool's render intent for a PENDING call (presentCall): one
// of [GenericCall], [TerminalCall] or [DiffCall]. The set is closed; a UI
// bridge switches on the concrete type or on [CallView.Card]. Each
// marshals to JSON with its "card" tag.
type CallView interface {
	// Card returns the card tag: "generic", "terminal" or "diff".
	Card() string
	callView()
}

// ResultView is a tool's render intent for a COMPLETED call
// (presentResult): one of [GenericResult], [TerminalResult] or
// [DiffResult].
type ResultView interface {
	// Card returns the card tag: "generic", "terminal" or "diff".
	Card() string
	resultView()
}

// Location is a file a call reads or modifies, so a capable UI can follow
// along. Line is 1-based; zero means unknown.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is one file mutation. OldText is nil for a new file (written as
// "oldText": null).
type FileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// GenericCall is the default pending card.
type GenericCall struct {
	// Title is the human-readable summary.
	Title string `json:"title"`
	// Kind is the icon/treatment: "read", "edit", "execute", ...; empty
	// means "other".
	Kind string `json:"kind,omitempty"`
	// RawInput is the salient input for a detail view (not the whole
	// arguments object); it must be JSON when set.
	RawInput json.RawMessage `json:"rawInput,omitempty"`
	// Content is extra UI content.
	Content []Content `json:"content,omitempty"`
	// Locations are the files the call reads or modifies.
	Locations []Location `json:"locations,omitempty"`
}

// TerminalCall is a shell command's pending card: Title is the command.
type TerminalCall struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Cwd         string `json:"cwd,omitempty"`
}

// DiffCall is a file create/modify pending card.
type DiffCall struct {
	Title     string     `json:"title"`
	Diffs     []FileDiff `json:"diffs"`
	Locations []Location `json:"locations,omitempty"`
}

// GenericResult is the default completed card: an optional replacement
// title and reformatted content.
type GenericResult struct {
	Title   string    `json:"title,omitempty"`
	Content []Content `json:"content,omitempty"`
}

// TerminalResult is a terminal run's captured output and exit status. The
// bridge, not the tool, derives a fenced fallback for incapable UIs.
type TerminalResult struct {
	Title    string `json:"title,omitempty"`
	Output   string `json:"output,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// DiffResult is a completed file mutation as an inline diff.
type DiffResult struct {
	Title string     `json:"title,omitempty"`
	Diffs []FileDiff `json:"diffs"`
}

// Card implements [CallView].
func (GenericCall) Card() string { return CardGeneric }

// Card implements [CallView].
func (TerminalCall) Card() string { return CardTerminal }

// Card implements [CallView].
func (DiffCall) Card() string { return CardDiff }

// Card implements [ResultView].
func (GenericResult) Card() string { return CardGeneric }

// Card implements [ResultView].
func (TerminalResult) Card() string { return CardTerminal }

// Card implements [ResultView].
func (DiffResult) Card() string { return CardDiff }

func (GenericCall) callView()      {}
func (TerminalCall) callView()     {}
func (DiffCall) callView()         {}
func (GenericResult) resultView()  {}
func (TerminalResult) resultView() {}
func (DiffResult) resultView()     {}

// MarshalJSON writes the card with its "card" tag first.
func (v GenericCall) MarshalJSON() ([]byte, error) {
	type plain GenericCall
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardGeneric, plain(v)})
}

// MarshalJSON writes the card with its "card" tag first.
func (v TerminalCall) MarshalJSON() ([]byte, error) {
	type plain TerminalCall
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardTerminal, plain(v)})
}

// MarshalJSON writes the card with its "card" tag first.
func (v DiffCall) MarshalJSON() ([]byte, error) {
	type plain DiffCall
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardDiff, plain(v)})
}

// MarshalJSON writes the card with its "card" tag first.
func (v GenericResult) MarshalJSON() ([]byte, error) {
	type plain GenericResult
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardGeneric, plain(v)})
}

// MarshalJSON writes the card with its "card" tag first.
func (v TerminalResult) MarshalJSON() ([]byte, error) {
	type plain TerminalResult
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardTerminal, plain(v)})
}

// MarshalJSON writes the card with its "card" tag first.
func (v DiffResult) MarshalJSON() ([]byte, error) {
	type plain DiffResult
	return json.Marshal(struct {
		Card string `json:"card"`
		plain
	}{CardDiff, plain(v)})
}

var (
	_ CallView   = GenericCall{}
	_ CallView   = TerminalCall{}
	_ CallView   = DiffCall{}
	_ ResultView = GenericResult{}
	_ ResultView = TerminalResult{}
	_ ResultView = DiffResult{}
)

// ResultData is what presentResult receives about a completed call: the
// model-facing content, whether it failed, and the tool's meta payload.
type ResultData struct {
	Content []Content       `json:"content"`
	IsError bool            `json:"isError"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	// Value is the result's canonical value (see [Result].Value).
	Value json.RawMessage `json:"value,omitempty"`
}
