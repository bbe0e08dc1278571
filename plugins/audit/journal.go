package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// The journal makes a record survive a crash of the gateway
// without waiting for a database commit: the entry is appended to a file
// of the instance's own (one write(2), in the kernel's page cache once it
// returns, so it outlives the process) and the database gets it with the
// next batch. The journal is emptied whenever every journaled entry is in
// the database. A journal whose process is gone (its flock is free) is
// replayed into the store when the store is next opened: its entries
// become unfinished records, unless their completed record made it (a
// completion is journaled too).

// maxJournal is the journal size past which entries wait for the database
// again (the writer has fallen behind for long).
const maxJournal = 64 << 20

// journalGlob is the pattern of the journals beside a SQLite file.
func journalGlob(db string) string { return db + ".journal-*" }

// JournalPath is the journal of instance beside the SQLite file db.
func JournalPath(db, instance string) string { return db + ".journal-" + instance }

type journal struct {
	mu      sync.Mutex
	f       *os.File
	path    string
	size    int64
	pending int // journaled entries not yet committed
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: journal %s is held by another process: %w", path, err)
	}
	return &journal{f: f, path: path}, nil
}

// append journals an entry record; false when the journal is too large
// (the caller then waits for the database).
func (j *journal) append(c *Call) (bool, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return false, err
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.size+int64(len(b)) > maxJournal {
		return false, nil
	}
	if _, err := j.f.Write(b); err != nil {
		return false, err
	}
	j.size += int64(len(b))
	j.pending++
	return true, nil
}

// committed notes that n journaled entries are in the database, and
// empties the journal once none is left outside it.
func (j *journal) committed(n int) {
	if n == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending -= n
	if j.pending == 0 && j.size > 0 {
		if err := j.f.Truncate(0); err == nil {
			j.size = 0
		}
	}
}

// close removes the journal (every entry is in the database) or, when
// some are not, keeps it for the next open to replay.
func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pending == 0 {
		os.Remove(j.path)
	}
	j.f.Close()
}

// replayJournals writes the entries of the journals beside db whose
// process is gone into s, and removes those journals.
func replayJournals(ctx context.Context, s Store, db string) error {
	paths, err := filepath.Glob(journalGlob(db))
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range paths {
		if err := replayJournal(ctx, s, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func replayJournal(ctx context.Context, s Store, path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil // gone meanwhile
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // its gateway runs
	}
	var calls []Call
	r := bufio.NewReader(io.LimitReader(f, maxJournal+1<<20))
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' { // a torn last line is skipped
			var c Call
			if json.Unmarshal(line, &c) == nil && c.ID != "" {
				calls = append(calls, c)
			}
		}
		if err != nil {
			break
		}
	}
	for len(calls) > 0 {
		n := min(len(calls), 512)
		if err := s.Write(ctx, calls[:n]); err != nil {
			return fmt.Errorf("audit: replaying %s: %w", path, err)
		}
		calls = calls[n:]
	}
	return os.Remove(path)
}
