package goja

import "sync"

// spareVM holds at most one run whose VM was prepared ahead (run.prepare) on a background
// goroutine, so that a run after an idle period does not pay for the VM's setup (most of an empty
// run's cost). A spare is used by exactly one run, never reused; at most one is held and at most
// one is being prepared. Close waits for a preparation in progress and drops the spare.
type spareVM struct {
	mu        sync.Mutex
	r         *run
	preparing bool
	closed    bool
	off       bool       // set only by this package's tests and benchmarks: no VM is prepared ahead
	prepared  *sync.Cond // on mu, broadcast when a preparation ends (not a WaitGroup: a run under
	// testing/synctest starts the preparation in its bubble, and Close may wait from outside it)
}

// take returns the prepared run, or nil.
func (s *spareVM) take() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.r
	s.r = nil
	return r
}

// refill starts preparing a run made by newRun in the background, unless one is held or being
// prepared, or the runtime was closed.
func (s *spareVM) refill(newRun func() *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil || s.preparing || s.closed || s.off {
		return
	}
	s.preparing = true
	go func() {
		r := newRun()
		err := r.prepare()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.preparing = false
		s.condLocked().Broadcast()
		if err == nil && !s.closed {
			s.r = r
		}
	}()
}

// close stops preparing runs ahead, waits for one being prepared, and drops the spare.
func (s *spareVM) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.waitLocked()
	s.r = nil
}

// waitLocked waits until no run is being prepared.
func (s *spareVM) waitLocked() {
	for s.preparing {
		s.condLocked().Wait()
	}
}

func (s *spareVM) condLocked() *sync.Cond {
	if s.prepared == nil {
		s.prepared = sync.NewCond(&s.mu)
	}
	return s.prepared
}
