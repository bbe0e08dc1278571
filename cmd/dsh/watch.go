package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/dsh-go/dsh/internal/dshconfig"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/permissions"
)

// reloadMu serialises reloads (one watcher per process in practice).
var reloadMu sync.Mutex

// reload applies cfg to the running gateway: the permission rules are
// swapped at once (a call is decided wholly by the old rules or wholly
// by the new), a server whose entry is gone is stopped, one whose entry
// changed is restarted with it, a new one is mounted; servers whose entry
// is unchanged, and every session, are left alone. A config that does
// not compile changes nothing. Settings read only at start (mode,
// timeouts, http) are not applied: each is named in notes.
func (g *gateway) reload(cfg *dshconfig.Config) (notes []string, err error) {
	reloadMu.Lock()
	defer reloadMu.Unlock()
	pol, err := permissions.Compile(cfg.Permissions)
	if err != nil {
		return nil, &dshconfig.Error{File: cfg.File, Key: "permissions", Msg: err.Error()}
	}
	profs, err := g.reloadProfiles(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Mode != g.cfg.Mode {
		notes = append(notes, "mode: changed; restart dsh to apply")
	}
	if !reflect.DeepEqual(cfg.Timeouts, g.cfg.Timeouts) {
		notes = append(notes, "timeouts: changed; restart dsh to apply")
	}
	oldHTTP, newHTTP := g.cfg.HTTP, cfg.HTTP
	oldHTTP.Unmapped, newHTTP.Unmapped = "", "" // applied with the profiles
	if !reflect.DeepEqual(newHTTP, oldHTTP) {
		notes = append(notes, "http: changed; restart dsh to apply")
	}
	for _, k := range []struct {
		key     string
		changed bool
	}{{"audit", !reflect.DeepEqual(cfg.Audit, g.cfg.Audit)}, {"approval", !reflect.DeepEqual(cfg.Approval, g.cfg.Approval)},
		{"console", !reflect.DeepEqual(cfg.Console, g.cfg.Console)}, {"callLog", !reflect.DeepEqual(cfg.CallLog, g.cfg.CallLog)}} {
		if k.changed {
			notes = append(notes, k.key+": changed; restart dsh to apply")
		}
	}
	g.pol.Store(pol)
	g.prof.set.Store(profs)
	g.representSessions()
	want := map[string]dshconfig.Server{}
	for _, s := range cfg.Servers {
		want[s.Name] = s
	}
	var errs []error
	names := make([]string, 0, len(g.servers))
	for name := range g.servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m := g.servers[name]
		s, keep := want[name]
		switch {
		case !keep:
			if err := m.fiber.Dispose(); err != nil {
				errs = append(errs, &dshconfig.Error{File: cfg.File, Key: "mcpServers." + name, Msg: "stopping: " + err.Error()})
			}
			delete(g.servers, name)
			notes = append(notes, "mcpServers."+name+": removed")
		case !reflect.DeepEqual(s, m.entry):
			if err := m.fiber.Update(g.clientConfig(s)); err != nil {
				errs = append(errs, &dshconfig.Error{File: cfg.File, Key: "mcpServers." + name, Msg: err.Error()})
			}
			g.servers[name] = mounted{entry: s, fiber: m.fiber}
			notes = append(notes, "mcpServers."+name+": restarted")
		}
	}
	for _, s := range cfg.Servers {
		if _, ok := g.servers[s.Name]; ok {
			continue
		}
		f, err := g.root.Plugin(mcpclient.Plugin, g.clientConfig(s))
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			errs = append(errs, &dshconfig.Error{File: cfg.File, Key: "mcpServers." + s.Name, Msg: err.Error()})
		}
		if f != nil {
			g.servers[s.Name] = mounted{entry: s, fiber: f}
		}
		notes = append(notes, "mcpServers."+s.Name+": added")
	}
	keep := *g.cfg
	keep.Servers, keep.Permissions, keep.File = cfg.Servers, cfg.Permissions, cfg.File
	keep.Profiles, keep.HTTP.Unmapped = cfg.Profiles, cfg.HTTP.Unmapped
	g.cfg = &keep
	return notes, errors.Join(errs...)
}

// watchConfig reloads path into g whenever its contents change, until ctx
// ends: it watches the file's directory (editors replace files by
// renaming), re-reads the file on each event, and reloads when the bytes
// differ from the last ones read. An invalid file is refused whole (its
// errors are printed, the running config stays); refresh is called after
// each applied reload. The watcher is ready when watchConfig returns.
func watchConfig(ctx context.Context, g *gateway, path string, stderr io.Writer, refresh func()) (done <-chan struct{}, err error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return nil, err
	}
	last, _ := os.ReadFile(abs)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				fmt.Fprintf(stderr, "dsh: watching %s: %v\n", path, err)
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) != abs {
					continue
				}
				data, err := os.ReadFile(abs)
				if err != nil || string(data) == string(last) {
					continue // gone for now (a rename under way), or unchanged
				}
				last = data
				cfg, err := dshconfig.Load(path)
				if err != nil {
					fmt.Fprintf(stderr, "dsh: %s changed but is invalid; the running config stays:\n", path)
					printErrors(stderr, err)
					continue
				}
				for _, wn := range cfg.Warnings {
					fmt.Fprintln(stderr, "dsh: warning:", wn)
				}
				notes, err := g.reload(cfg)
				refresh()
				for _, n := range notes {
					fmt.Fprintf(stderr, "dsh: reload: %s\n", n)
				}
				if err != nil {
					printErrors(stderr, err)
				}
				fmt.Fprintf(stderr, "dsh: reloaded %s\n", path)
			}
		}
	}()
	return ch, nil
}
