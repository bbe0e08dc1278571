package toolfs

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
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

func (plugin) Name() string              { return "tool-fs" }
func (plugin) Inject() []host.ServiceKey { return []host.ServiceKey{tools.Service} }

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
	reg, err := tools.Service.Get(c)
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

// ReadResult is read's declared output: the canonical value a read
// returns (its Result.Value, structuredContent over MCP, the value a Code
// Mode program gets). The model reads Text, with a note when it was cut.
type ReadResult struct {
	Text string `json:"text" jsonschema:"the lines read, as UTF-8 (other bytes read as U+FFFD)"`
	Cut  bool   `json:"cut,omitempty" jsonschema:"the lines exceeded the read limit and were cut; read on with offset and limit"`
	// Limit is the read limit in bytes when Cut.
	Limit int `json:"limit,omitempty" jsonschema:"the read limit in bytes, when cut"`
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
	read, err := tools.Define(tools.TypedTool[ReadArgs, ReadResult]{
		Name:        "read",
		Description: "Read a text file from the workspace. Optionally start at a 1-based line (offset) and return at most limit lines.",
		// Reading changes nothing: reads may run alongside each other.
		Concurrency: tools.Parallel,
		Execute: func(ctx context.Context, a ReadArgs, _ *tools.Execution) (ReadResult, error) {
			return doRead(ws, a, maxRead)
		},
		Render: func(r ReadResult) ([]tools.Content, error) {
			text := r.Text
			if r.Cut {
				text += fmt.Sprintf("\n[cut: the output exceeded %d bytes; use offset and limit]", r.Limit)
			}
			return []tools.Content{tools.Text(text)}, nil
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
	write, err := tools.Define(tools.TypedTool[WriteArgs, tools.Output]{
		Name:        "write",
		Description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
		// A write is a barrier: a read beside it could see either content.
		Concurrency: tools.Exclusive,
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
	edit, err := tools.Define(tools.TypedTool[EditArgs, tools.Output]{
		Name:        "edit",
		Description: "Replace one exact, unique occurrence of old_string with new_string in a workspace file.",
		Concurrency: tools.Exclusive,
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

func doRead(ws *Workspace, a ReadArgs, maxRead int) (ReadResult, error) {
	root, rel, err := ws.open(a.Path)
	if err != nil {
		return ReadResult{}, err
	}
	defer root.Close()
	f, err := openRegular(root, rel)
	if err != nil {
		return ReadResult{}, fmt.Errorf("read %s: %w", a.Path, err)
	}
	defer f.Close()
	// Stream the lines [offset, offset+limit), holding at most maxRead+1
	// bytes of them: a huge file is never loaded whole.
	br := bufio.NewReaderSize(f, 64<<10)
	for line := 1; line < a.Offset; {
		_, err := br.ReadSlice('\n')
		if err == nil {
			line++
		} else if err != bufio.ErrBufferFull {
			break
		}
	}
	var out []byte
	for n := 0; a.Limit <= 0 || n < a.Limit; {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxRead {
			break
		}
		if err == nil {
			n++
		} else if err != bufio.ErrBufferFull {
			if err != io.EOF {
				return ReadResult{}, fmt.Errorf("read %s: %w", a.Path, err)
			}
			break
		}
	}
	cut := len(out) > maxRead
	if cut {
		out = out[:maxRead]
		// Do not split the last character.
		for i := 1; i < utf8.UTFMax && i <= len(out); i++ {
			if utf8.RuneStart(out[len(out)-i]) {
				if !utf8.FullRune(out[len(out)-i:]) {
					out = out[:len(out)-i]
				}
				break
			}
		}
	}
	// The result is text: bytes that are not UTF-8 read as U+FFFD.
	r := ReadResult{Text: strings.ToValidUTF8(string(out), "\uFFFD"), Cut: cut}
	if cut {
		r.Limit = maxRead
	}
	return r, nil
}

func doWrite(ws *Workspace, a WriteArgs) (tools.Output, error) {
	root, rel, err := ws.open(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	defer root.Close()
	before, existed, err := readIfExists(root, rel)
	if err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	if err := atomicWrite(root, rel, []byte(a.Content)); err != nil {
		return tools.Output{}, fmt.Errorf("write %s: %w", a.Path, err)
	}
	rel = filepath.ToSlash(rel)
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
	root, rel, err := ws.open(a.Path)
	if err != nil {
		return tools.Output{}, err
	}
	defer root.Close()
	before, err := readAll(root, rel)
	if err != nil {
		return tools.Output{}, fmt.Errorf("edit %s: %w", a.Path, err)
	}
	switch n := strings.Count(before, a.OldString); n {
	case 0:
		return tools.Output{}, fmt.Errorf("edit %s: old_string was not found in the file", a.Path)
	case 1:
	default:
		return tools.Output{}, fmt.Errorf("edit %s: old_string occurs %d times; include more surrounding text so it is unique", a.Path, n)
	}
	after := strings.Replace(before, a.OldString, a.NewString, 1)
	if err := atomicWrite(root, rel, []byte(after)); err != nil {
		return tools.Output{}, fmt.Errorf("edit %s: %w", a.Path, err)
	}
	rel = filepath.ToSlash(rel)
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

// openRegular opens rel under root for reading and refuses anything but
// a regular file. The open does not block on a FIFO (O_NONBLOCK), and the
// type check is made on the opened file, not on the path.
func openRegular(root *os.Root, rel string) (*os.File, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			err = errors.New("is a directory")
		} else {
			err = fmt.Errorf("not a regular file (%s)", st.Mode().Type())
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func readAll(root *os.Root, rel string) (string, error) {
	f, err := openRegular(root, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

func readIfExists(root *os.Root, rel string) (string, bool, error) {
	s, err := readAll(root, rel)
	if safeerr.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return s, true, nil
}

// atomicWrite writes b to a temporary file beside rel and renames it over
// rel, keeping rel's permissions when it exists. Every step goes through
// root, so it stays inside the workspace.
func atomicWrite(root *os.Root, rel string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := root.Stat(rel); err == nil {
		if st.IsDir() {
			return errors.New("is a directory")
		}
		mode = st.Mode().Perm()
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(rel), ".dsh-write-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, root.Chmod(tmp, mode)); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}
