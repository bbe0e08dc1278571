package spill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name.
const Name = "spill"

// Defaults of [Config].
const (
	DefaultMaxInlineBytes = 32 << 10
	DefaultPreviewBytes   = 2 << 10
)

// LocatorPrefix starts every locator a [DirStore] returns.
const LocatorPrefix = "spill:"

// Store keeps spilled content. Put stores data whole and returns a
// locator, unique to this Put, that Get resolves back to it; key names the
// content (derived from the call id: "<id>.<block>.txt" or
// "<id>.value.json", not unique across turns or sessions). Put
// is called synchronously on the goroutine of the call that spills (a
// slow Put back-pressures it); both must be safe for concurrent use.
type Store interface {
	Put(ctx context.Context, key string, data []byte) (locator string, err error)
	Get(ctx context.Context, locator string) ([]byte, error)
}

// Config configures the plugin.
type Config struct {
	// Dir is the directory of the default [DirStore] (default: dsh-spill
	// in the system's temporary directory). Ignored when Store is set.
	Dir string `json:"dir,omitempty"`
	// Store, when set, replaces the directory store.
	Store Store `json:"-"`
	// MaxInlineBytes is the largest text block (or logged value) kept
	// inline, in bytes (default [DefaultMaxInlineBytes]).
	MaxInlineBytes int `json:"maxInlineBytes,omitempty"`
	// PreviewBytes is the size of the preview kept in place of spilled
	// content, in bytes, cut at a character boundary (default
	// [DefaultPreviewBytes], at most MaxInlineBytes).
	PreviewBytes int `json:"previewBytes,omitempty"`
}

// Validate reports a negative limit or a preview longer than the limit.
func (c Config) Validate() error {
	var errs []error
	if c.MaxInlineBytes < 0 {
		errs = append(errs, fmt.Errorf("negative MaxInlineBytes %d", c.MaxInlineBytes))
	}
	if c.PreviewBytes < 0 {
		errs = append(errs, fmt.Errorf("negative PreviewBytes %d", c.PreviewBytes))
	}
	if c.MaxInlineBytes > 0 && c.PreviewBytes > c.MaxInlineBytes {
		errs = append(errs, fmt.Errorf("PreviewBytes %d exceeds MaxInlineBytes %d", c.PreviewBytes, c.MaxInlineBytes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("spill: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxInlineBytes == 0 {
		c.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if c.PreviewBytes == 0 {
		c.PreviewBytes = min(DefaultPreviewBytes, c.MaxInlineBytes)
	}
	if c.Store == nil {
		dir := c.Dir
		if dir == "" {
			dir = filepath.Join(os.TempDir(), "dsh-spill")
		}
		c.Store = DirStore{Dir: dir}
	}
	return c
}

// Plugin is the spill policy plugin, configured by a [Config]. It needs
// the tools registry's events declared (load the registry first).
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return Name }

// Apply registers the two listeners.
func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	s := &spiller{cfg: cfg.withDefaults(), c: c}
	if _, err := host.OnWaterfall(c, codemode.CodeDispatchLog, s.dispatchLog); err != nil {
		return err
	}
	_, err = host.OnWaterfall(c, tools.PostExecute, s.postExecute)
	return err
}

type spiller struct {
	cfg Config
	c   *host.Context
}

// dispatchLog spills the durable copy of a settled sub-call.
func (s *spiller) dispatchLog(ctx context.Context, in codemode.DispatchLogInput, next codemode.DispatchLogNext) (tools.CodeDispatch, error) {
	d, err := next(ctx)
	if err != nil {
		return d, err
	}
	d.Result.Content, _ = s.spillContent(ctx, in.ID, d.Result.Content)
	if v := d.Result.Value; len(v) > s.cfg.MaxInlineBytes {
		if loc, ok := s.put(ctx, in.ID+".value.json", v); ok {
			d.Result.Value, _ = json.Marshal(struct {
				Spill string `json:"$spill"`
				Bytes int    `json:"bytes"`
			}{loc, len(v)})
		}
	}
	return d, nil
}

// postExecute spills the final content of a native successful result.
func (s *spiller) postExecute(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
	d, err := next(ctx)
	x := in.Execution()
	if err != nil || d.Kind != tools.Accept || !x.Parent().IsZero() {
		return d, err
	}
	res := in.Result()
	if res.IsError {
		return d, nil
	}
	content := d.Content
	if content == nil {
		content = res.Content
	}
	if out, changed := s.spillContent(ctx, x.CallID(), content); changed {
		d.Content = out
	}
	return d, nil
}

// spillContent returns cs with each text block over the limit replaced by
// its preview and locator (a copy; cs itself, unchanged, when nothing
// spilled).
func (s *spiller) spillContent(ctx context.Context, id string, cs []tools.Content) ([]tools.Content, bool) {
	var out []tools.Content
	for i, c := range cs {
		if c.Type != tools.ContentText || len(c.Text) <= s.cfg.MaxInlineBytes {
			continue
		}
		loc, ok := s.put(ctx, id+"."+strconv.Itoa(i)+".txt", []byte(c.Text))
		if !ok {
			continue
		}
		if out == nil {
			out = append([]tools.Content(nil), cs...)
		}
		out[i] = tools.Text(Preview(c.Text, s.cfg.PreviewBytes, loc))
	}
	if out == nil {
		return cs, false
	}
	return out, true
}

func (s *spiller) put(ctx context.Context, key string, data []byte) (loc string, ok bool) {
	loc, err := safePut(s.cfg.Store, context.WithoutCancel(ctx), key, data)
	if err != nil {
		s.c.Logger().Warn().Err(err).Str("key", key).Msg("spilling content failed; it stays inline")
		return "", false
	}
	return loc, true
}

// safePut is st.Put with a panic turned into an error.
func safePut(st Store, ctx context.Context, key string, data []byte) (loc string, err error) {
	defer func() {
		if v := recover(); v != nil {
			loc, err = "", fmt.Errorf("the spill store panicked: %v", v)
		}
	}()
	return st.Put(ctx, key, data)
}

// Preview is the text that replaces spilled text: its first n bytes (cut
// back to a character boundary), then a line saying how large the whole
// is and where it is.
func Preview(text string, n int, locator string) string {
	n = min(n, len(text))
	for n > 0 && n < len(text) && !utf8.RuneStart(text[n]) {
		n--
	}
	return strings.ToValidUTF8(text[:n], "\uFFFD") + fmt.Sprintf("\n… [%d bytes in all; the whole content is spilled to %s]", len(text), locator)
}

// DirStore is the default [Store]: one file per spill in Dir (created on
// first use, mode 0700; files 0600), named by the key made safe plus a
// random suffix. Its locators are [LocatorPrefix] + the file name.
type DirStore struct{ Dir string }

// Put implements [Store]: it writes data to a new file (temporary name,
// then renamed, so that a reader never sees part of it).
func (s DirStore) Put(_ context.Context, key string, data []byte) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	name := safeName(key) + "." + hex.EncodeToString(rnd[:])
	tmp, err := os.CreateTemp(s.Dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.Dir, name)); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return LocatorPrefix + name, nil
}

// Get implements [Store]: the content of a locator Put returned. A
// locator that is not one of this store's (another prefix, a path, a
// name Put cannot make) is refused without touching the file system
// outside Dir.
func (s DirStore) Get(_ context.Context, locator string) ([]byte, error) {
	name, ok := strings.CutPrefix(locator, LocatorPrefix)
	if !ok || name == "" || safeName(name) != name || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("spill: %q is not a locator of this store", locator)
	}
	return os.ReadFile(filepath.Join(s.Dir, name))
}

// safeName maps key to a file name: ASCII letters, digits, '.', '-' and
// '_' kept, anything else '_', at most 128 bytes (plus a leading '_' when
// it would start with '.').
func safeName(key string) string {
	b := []byte(key)
	if len(b) > 128 {
		b = b[:128]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s[0] == '.' {
		// Never "." or "..", nor a name of the store's temporary files.
		return "_" + s
	}
	return s
}
