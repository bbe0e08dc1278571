package toolfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Config configures the plugin. Root is required: the directory the tools
// may touch.
type Config struct {
	Root string
	// MaxReadBytes caps what read returns (default 256 KiB); longer files
	// are cut and the cut is said in the text.
	MaxReadBytes int
}

// DefaultMaxReadBytes is the default of Config.MaxReadBytes.
const DefaultMaxReadBytes = 256 << 10

// Plugin registers read, write and edit. It injects the tool registry and
// takes a Config (or *Config).
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string     { return "tool-fs" }
func (plugin) Inject() []string { return []string{tools.ServiceName} }

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	if cfg.MaxReadBytes <= 0 {
		cfg.MaxReadBytes = DefaultMaxReadBytes
	}
	ws, err := NewWorkspace(cfg.Root)
	if err != nil {
		return err
	}
	reg, err := host.Get[*tools.Registry](c, tools.ServiceName)
	if err != nil {
		return err
	}
	defs, err := Definitions(ws, cfg.MaxReadBytes)
	if err != nil {
		return err
	}
	for _, d := range defs {
		if _, err := reg.Register(c, d); err != nil {
			return err
		}
	}
	return nil
}

// ReadArgs are read's arguments.
type ReadArgs struct {
	Path   string `json:"path" dsh:"required" desc:"File path, relative to the workspace root (or absolute inside it)."`
	Offset int    `json:"offset,omitempty" desc:"1-based line to start at (default 1)."`
	Limit  int    `json:"limit,omitempty" desc:"Maximum number of lines to return (default: all)."`
}

// WriteArgs are write's arguments.
type WriteArgs struct {
	Path    string `json:"path" dsh:"required" desc:"File path, relative to the workspace root (or absolute inside it)."`
	Content string `json:"content" dsh:"required" desc:"The complete new content of the file."`
}

// EditArgs are edit's arguments.
type EditArgs struct {
	Path      string `json:"path" dsh:"required" desc:"File path, relative to the workspace root (or absolute inside it)."`
	OldString string `json:"old_string" dsh:"required" desc:"Exact text to replace; it must occur exactly once in the file."`
	NewString string `json:"new_string" dsh:"required" desc:"Replacement text."`
}

// Meta is the presentation payload write and edit attach to their result:
// the applied hunks, so presentResult renders the diff from the logged
// result alone (replay-deterministic).
type Meta struct {
	Diffs   []tools.FileDiff `json:"diffs"`
	Created bool             `json:"created,omitempty"`
}

// Definitions returns the three tool definitions bound to ws.
func Definitions(ws *Workspace, maxRead int) ([]tools.Definition, error) {
	read, err := tools.Define(tools.TypedTool[ReadArgs]{
		Name:        "read",
		Description: "Read a text file from the workspace. Optionally start at a 1-based line (offset) and return at most limit lines.",
		Execute: func(ctx context.Context, a ReadArgs, _ *tools.Execution) (tools.Output, error) {
			return doRead(ws, a, maxRead)
		},
		PresentCall: func(a ReadArgs) tools.CallView {
			loc := tools.Location{Path: a.Path}
			if a.Offset > 0 {
				loc.Line = a.Offset
			}
			return tools.GenericCall{Title: "Read " + a.Path, Kind: "read", Locations: []tools.Location{loc}}
		},
	})
	if err != nil {
		return nil, err
	}
	write, err := tools.Define(tools.TypedTool[WriteArgs]{
		Name:        "write",
		Description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
		Execute: func(ctx context.Context, a WriteArgs, _ *tools.Execution) (tools.Output, error) {
			return doWrite(ws, a)
		},
		PresentCall: func(a WriteArgs) tools.CallView {
			return tools.GenericCall{Title: "Write " + a.Path, Kind: "edit", Locations: []tools.Location{{Path: a.Path}}}
		},
		PresentResult: presentDiff[WriteArgs]("Wrote "),
	})
	if err != nil {
		return nil, err
	}
	edit, err := tools.Define(tools.TypedTool[EditArgs]{
		Name:        "edit",
		Description: "Replace one exact, unique occurrence of old_string with new_string in a workspace file.",
		Execute: func(ctx context.Context, a EditArgs, _ *tools.Execution) (tools.Output, error) {
			return doEdit(ws, a)
		},
		PresentCall: func(a EditArgs) tools.CallView {
			old := a.OldString
			return tools.DiffCall{Title: "Edit " + a.Path, Diffs: []tools.FileDiff{{Path: a.Path, OldText: &old, NewText: a.NewString}}, Locations: []tools.Location{{Path: a.Path}}}
		},
		PresentResult: presentDiff[EditArgs]("Edited "),
	})
	if err != nil {
		return nil, err
	}
	return []tools.Definition{read, write, edit}, nil
}

func presentDiff[A any](verb string) func(a A, r tools.ResultData) tools.ResultView {
	return func(_ A, r tools.ResultData) tools.ResultView {
		if r.IsError || len(r.Meta) == 0 {
			return nil
		}
		var m Meta
		if err := json.Unmarshal(r.Meta, &m); err != nil || len(m.Diffs) == 0 {
			return nil
		}
		return tools.DiffResult{Title: verb + m.Diffs[0].Path, Diffs: m.Diffs}
	}
}

func doRead(ws *Workspace, a ReadArgs, maxRead int) (tools.Output, error) {
	p, err := ws.Resolve(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return tools.Output{}, fmt.Errorf("read %s: %w", a.Path, err)
	}
	text := string(b)
	if a.Offset > 1 || a.Limit > 0 {
		lines := splitLines(text)
		lo := min(max(a.Offset, 1)-1, len(lines))
		hi := len(lines)
		if a.Limit > 0 {
			hi = min(lo+a.Limit, hi)
		}
		text = strings.Join(lines[lo:hi], "")
	}
	if len(text) > maxRead {
		text = text[:maxRead] + fmt.Sprintf("\n[cut: the output exceeded %d bytes; use offset and limit]", maxRead)
	}
	return tools.Output{Content: []tools.Content{tools.Text(text)}}, nil
}

func doWrite(ws *Workspace, a WriteArgs) (tools.Output, error) {
	p, err := ws.Resolve(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	before, existed, err := readIfExists(p)
	if err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	if err := atomicWrite(p, []byte(a.Content)); err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	rel := ws.Rel(p)
	m := Meta{Created: !existed}
	if !existed {
		m.Diffs = []tools.FileDiff{{Path: rel, NewText: a.Content}}
	} else if h, ok := hunk(before, a.Content); ok {
		m.Diffs = []tools.FileDiff{{Path: rel, OldText: &h.OldText, NewText: h.NewText}}
	}
	verb := "Updated"
	if !existed {
		verb = "Created"
	}
	return output(fmt.Sprintf("%s %s (%d bytes).", verb, rel, len(a.Content)), m)
}

func doEdit(ws *Workspace, a EditArgs) (tools.Output, error) {
	if a.OldString == "" {
		return tools.Output{}, errors.New("edit: old_string is empty; use write to create a file")
	}
	p, err := ws.Resolve(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return tools.Output{}, fmt.Errorf("edit %s: %w", a.Path, err)
	}
	before := string(b)
	switch n := strings.Count(before, a.OldString); n {
	case 0:
		return tools.Output{}, fmt.Errorf("edit %s: old_string was not found in the file", a.Path)
	case 1:
	default:
		return tools.Output{}, fmt.Errorf("edit %s: old_string occurs %d times; include more surrounding text so it is unique", a.Path, n)
	}
	after := strings.Replace(before, a.OldString, a.NewString, 1)
	if err := atomicWrite(p, []byte(after)); err != nil {
		return tools.Output{}, fmt.Errorf("edit %s: %w", a.Path, err)
	}
	rel := ws.Rel(p)
	var m Meta
	if h, ok := hunk(before, after); ok {
		m.Diffs = []tools.FileDiff{{Path: rel, OldText: &h.OldText, NewText: h.NewText}}
	}
	return output(fmt.Sprintf("Edited %s.", rel), m)
}

func output(text string, m Meta) (tools.Output, error) {
	meta, err := json.Marshal(m)
	if err != nil {
		return tools.Output{}, err
	}
	return tools.Output{Content: []tools.Content{tools.Text(text)}, Meta: meta}, nil
}

func readIfExists(p string) (string, bool, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// atomicWrite writes b to a temporary file beside p and renames it over p,
// keeping p's permissions when it exists.
func atomicWrite(p string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(p); err == nil {
		mode = st.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".dsh-write-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, mode)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
