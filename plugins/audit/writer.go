package audit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// OnFull says what happens to a call whose entry record finds the write
// queue full.
type OnFull string

const (
	// Block waits for room up to BlockTimeout, then fails the call
	// closed.
	Block OnFull = "block"
	// Fail fails the call closed at once.
	Fail OnFull = "fail"
)

// WriterConfig bounds the write queue.
type WriterConfig struct {
	// Queue is the number of entry records that may wait to be written
	// (default 4096). A call's completion always has room: each call in
	// the queue or in flight holds at most one entry and one completion,
	// so the queue holds at most Queue entries plus one completion per
	// call in flight.
	Queue int
	// OnFull is Block (default) or Fail.
	OnFull OnFull
	// BlockTimeout bounds the wait for room under Block, and the wait
	// for a call's entry record to be written (default 2s). Past it the
	// call is failed closed (AUDIT_UNAVAILABLE); no record is dropped
	// silently.
	BlockTimeout time.Duration
	// MaxBatch bounds the records written per transaction (default 512).
	MaxBatch int
	// Writers is the number of transactions in flight at once (default
	// 1; the recorder uses 4 for PostgreSQL, whose commits then overlap).
	Writers int
	// Journal, when set, is the entry journal's path (the recorder sets
	// it for SQLite: JournalPath): an entry record is appended there, one
	// write(2), and the call goes on without waiting for the database;
	// the record survives a crash of the process all the same (the next
	// open replays the journal). Linger
	// (default 20ms with a journal) then lets batches gather before each commit.
	Journal string
	Linger  time.Duration
}

func (c *WriterConfig) defaults() {
	if c.Queue <= 0 {
		c.Queue = 4096
	}
	if c.OnFull == "" {
		c.OnFull = Block
	}
	if c.BlockTimeout <= 0 {
		c.BlockTimeout = 2 * time.Second
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 512
	}
	if c.Writers <= 0 {
		c.Writers = 1
	}
	if c.Journal != "" && c.Linger == 0 {
		c.Linger = 20 * time.Millisecond
	}
}

type wop struct {
	call      Call
	entry     bool
	journaled bool
	done      chan error // entry records: told when written (or not)
}

// writer is the bounded write queue and its one writing goroutine, which
// writes what is queued in batches, one transaction each.
type writer struct {
	store Store
	cfg   WriterConfig
	log   *zerolog.Logger
	j     *journal

	mu      sync.Mutex
	q       []wop
	entries int           // entry records queued
	room    chan struct{} // closed when entries drop (replaced after)
	wake    chan struct{} // cap 1
	closed  bool
	closing chan struct{} // closed by close

	stopped chan struct{}

	// Written, Failed count records written and records that could not
	// be written (each logged at error level).
	Written, Failed atomic.Int64
}

func newWriter(store Store, cfg WriterConfig, log *zerolog.Logger) (*writer, error) {
	cfg.defaults()
	w := &writer{store: store, cfg: cfg, log: log, room: make(chan struct{}), wake: make(chan struct{}, 1),
		closing: make(chan struct{}), stopped: make(chan struct{})}
	if cfg.Journal != "" {
		j, err := openJournal(cfg.Journal)
		if err != nil {
			return nil, err
		}
		w.j = j
	}
	var wg sync.WaitGroup
	for range cfg.Writers {
		wg.Go(w.run)
	}
	go func() {
		wg.Wait()
		if w.j != nil {
			w.j.close()
		}
		close(w.stopped)
	}()
	return w, nil
}

// enqueueEntry queues a call's entry record, waiting for room as the
// config says. The returned channel tells when it is written.
func (w *writer) enqueueEntry(ctx context.Context, c Call) (<-chan error, error) {
	done := make(chan error, 1)
	var timer *time.Timer
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return nil, ErrClosed
		}
		if w.entries < w.cfg.Queue {
			op := wop{call: c, entry: true, done: done}
			if w.j != nil {
				// Journaled under mu, so that the journal's order is the
				// queue's and no truncation falls between the two.
				ok, err := w.j.append(&c)
				if err != nil {
					w.mu.Unlock()
					return nil, fmt.Errorf("audit: entry journal: %w", err)
				}
				if ok {
					op.journaled = true
					done <- nil // durable now; the database follows
				}
			}
			w.entries++
			w.q = append(w.q, op)
			w.mu.Unlock()
			w.signal()
			if op.journaled {
				return closedDone, nil
			}
			return done, nil
		}
		room := w.room
		w.mu.Unlock()
		if w.cfg.OnFull == Fail {
			return nil, fmt.Errorf("%w (%d entry records waiting; audit.onFull is \"fail\")", ErrQueueFull, w.cfg.Queue)
		}
		if timer == nil {
			timer = time.NewTimer(w.cfg.BlockTimeout)
			defer timer.Stop()
		}
		select {
		case <-room:
		case <-timer.C:
			return nil, fmt.Errorf("%w (no room within %v)", ErrQueueFull, w.cfg.BlockTimeout)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// enqueueFinal queues a completed record: always taken (see
// WriterConfig.Queue), unless the writer is closed, which is reported.
func (w *writer) enqueueFinal(c Call) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.Failed.Add(1)
		w.log.Error().Str("record", c.ID).Str("tool", c.Tool).Msg("audit: record not written: the recorder is closed")
		return
	}
	op := wop{call: c}
	if w.j != nil {
		// Journaled too, so that a completed call is on record as such
		// even if the process dies before the batch commits.
		if ok, err := w.j.append(&c); err == nil && ok {
			op.journaled = true
		}
	}
	w.q = append(w.q, op)
	w.mu.Unlock()
	w.signal()
}

// closedDone is the done channel of a journaled entry: always ready.
var closedDone = func() <-chan error {
	ch := make(chan error)
	close(ch)
	return ch
}()

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run() {
	for {
		w.mu.Lock()
		for len(w.q) == 0 {
			if w.closed {
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			select {
			case <-w.wake:
			case <-w.closing:
			}
			w.mu.Lock()
		}
		if w.cfg.Linger > 0 && !w.closed && len(w.q) < w.cfg.MaxBatch {
			// Journaled entries are durable already: let the batch grow.
			w.mu.Unlock()
			t := time.NewTimer(w.cfg.Linger)
			select {
			case <-t.C:
			case <-w.closing:
				t.Stop()
			}
			w.mu.Lock()
		}
		var batch []wop
		if len(w.q) <= w.cfg.MaxBatch {
			batch, w.q = w.q, nil
		} else {
			batch = w.q[:w.cfg.MaxBatch:w.cfg.MaxBatch]
			w.q = append([]wop(nil), w.q[w.cfg.MaxBatch:]...)
		}
		more := len(w.q) > 0
		w.mu.Unlock()
		if more {
			w.signal() // another writer may take the rest meanwhile
		}
		w.write(batch)
	}
}

func (w *writer) write(batch []wop) {
	// A call whose completion is in the batch needs no entry record: the
	// completion carries everything (it is one row either way).
	final := make(map[string]bool, len(batch))
	for i := range batch {
		if !batch[i].entry {
			final[batch[i].call.ID] = true
		}
	}
	calls := make([]Call, 0, len(batch))
	for i := range batch {
		if !batch[i].entry || !final[batch[i].call.ID] {
			calls = append(calls, batch[i].call)
		}
	}
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = w.store.Write(ctx, calls)
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		w.Failed.Add(int64(len(batch)))
		w.log.Error().Err(err).Int("records", len(batch)).Msg("audit: records could not be written; their calls are failed closed where still possible")
	} else {
		w.Written.Add(int64(len(batch)))
	}
	entries, journaled := 0, 0
	for _, op := range batch {
		if op.journaled {
			journaled++
		}
		if op.entry {
			entries++
			if !op.journaled {
				op.done <- err
			}
		}
	}
	if err == nil && w.j != nil {
		// Entries that could not be written stay in the journal, which
		// is then kept until the next open replays it.
		w.j.committed(journaled)
	}
	if entries > 0 {
		w.mu.Lock()
		w.entries -= entries
		close(w.room)
		w.room = make(chan struct{})
		w.mu.Unlock()
	}
}

// close writes what is queued and stops the writer.
func (w *writer) close() {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.closing)
	}
	<-w.stopped
}
