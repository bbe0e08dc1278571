package toolfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// ErrOutsideWorkspace is wrapped by every path-confinement error.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// Workspace confines file access to one directory tree. Its zero value is
// not usable; make one with [NewWorkspace].
type Workspace struct {
	root string // absolute, symlinks resolved
}

// NewWorkspace returns a workspace rooted at dir, which must exist and be a
// directory. Symlinks in dir itself are resolved once, here.
func NewWorkspace(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("toolfs: workspace root is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("toolfs: workspace root %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("toolfs: workspace root %q: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("toolfs: workspace root %q: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("toolfs: workspace root %q is not a directory", dir)
	}
	return &Workspace{root: real}, nil
}

// Root returns the workspace's absolute, symlink-free root.
func (w *Workspace) Root() string { return w.root }

// Resolve maps a path the model gave (relative to the root, or absolute
// inside it) to an absolute path inside the workspace. It rejects, with an
// error wrapping [ErrOutsideWorkspace] that names the path: empty paths and
// NUL bytes; ".." segments that climb above the root; absolute paths
// outside the root; and symlinks anywhere along the path (the target
// itself included) whose destination is outside the root. The target need
// not exist (a file about to be written): then its nearest existing
// ancestor is checked.
func (w *Workspace) Resolve(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("toolfs: empty path: %w", ErrOutsideWorkspace)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("toolfs: path %q contains a NUL byte: %w", p, ErrOutsideWorkspace)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(w.root, p)
	}
	if !w.inside(abs) {
		return "", fmt.Errorf("toolfs: path %q resolves to %q, outside the workspace %q: %w", p, abs, w.root, ErrOutsideWorkspace)
	}
	// Resolve symlinks on the longest existing prefix.
	existing, rest := abs, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			if !w.inside(real) {
				return "", fmt.Errorf("toolfs: path %q goes through a symlink to %q, outside the workspace %q: %w", p, real, w.root, ErrOutsideWorkspace)
			}
			return filepath.Join(real, rest), nil
		}
		if !safeerr.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("toolfs: path %q: %w", p, err)
		}
		// A dangling symlink would be followed on create: check it.
		if target, lerr := os.Readlink(existing); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(existing), target)
			}
			if !w.inside(filepath.Clean(target)) {
				return "", fmt.Errorf("toolfs: path %q is a symlink to %q, outside the workspace %q: %w", p, target, w.root, ErrOutsideWorkspace)
			}
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", fmt.Errorf("toolfs: path %q: no existing ancestor: %w", p, ErrOutsideWorkspace)
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

// open resolves p (see [Workspace.Resolve]) and opens the root for the
// file operation itself, returning the target relative to it. The
// operation goes through the [os.Root], which refuses to follow any
// symlink out of the root, so a symlink swapped in after Resolve checked
// the path cannot lead outside the workspace.
func (w *Workspace) open(p string) (*os.Root, string, error) {
	abs, err := w.Resolve(p)
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return nil, "", fmt.Errorf("toolfs: path %q: %w", p, err)
	}
	root, err := os.OpenRoot(w.root)
	if err != nil {
		return nil, "", fmt.Errorf("toolfs: workspace root: %w", err)
	}
	return root, rel, nil
}

// Rel returns p (absolute, inside the workspace) relative to the root, with
// forward slashes, for titles and locations.
func (w *Workspace) Rel(p string) string {
	if rel, err := filepath.Rel(w.root, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

func (w *Workspace) inside(p string) bool {
	return p == w.root || strings.HasPrefix(p, w.root+string(filepath.Separator))
}
