package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// A plugin's Lifetime is cancelled when its fiber is disposed, before any
// of its disposers runs, so a disposer can wait for the goroutines that
// run under it; the cause wraps ErrFiberClosed.
func TestH14_LifetimeIsCancelledWhenTheFiberIsDisposed(t *testing.T) {
	h := host.New()
	defer h.Close()
	var wg sync.WaitGroup
	var life context.Context
	sawDone := false
	f, err := h.Root().Plugin(host.Define("worker", nil, func(c *host.Context) error {
		life = c.Lifetime()
		if c.Lifetime() != life || c.Isolate().Lifetime() != life {
			t.Error("one run has one lifetime")
		}
		wg.Add(1)
		go func() { defer wg.Done(); <-life.Done() }()
		_, err := c.Track("wait", "worker goroutine", func() error {
			sawDone = life.Err() != nil
			wg.Wait() // would block forever if the lifetime were cancelled after the disposers
			return nil
		})
		return err
	}), nil)
	if err != nil || f.Err() != nil {
		t.Fatal(err, f.Err())
	}
	if life.Err() != nil {
		t.Fatal("the lifetime of an active fiber is cancelled")
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if !sawDone {
		t.Error("a disposer ran before the lifetime was cancelled")
	}
	if cause := context.Cause(life); !errors.Is(cause, host.ErrFiberClosed) {
		t.Errorf("cause %v, want ErrFiberClosed", cause)
	}
}

// A restart (Update) and a failed start end the run's lifetime; the next
// run gets a fresh one, and a context of an ended run gets one already
// cancelled.
func TestH14_LifetimeEndsWithEachRun(t *testing.T) {
	h := host.New()
	defer h.Close()
	var ctxs []*host.Context
	var lives []context.Context
	f, err := h.Root().Plugin(host.Define("p", nil, func(c *host.Context) error {
		ctxs, lives = append(ctxs, c), append(lives, c.Lifetime())
		if c.Config() == "fail" {
			return errors.New("start failed")
		}
		return nil
	}), "ok")
	if err != nil || f.Err() != nil {
		t.Fatal(err, f.Err())
	}
	if err := f.Update("ok"); err != nil {
		t.Fatal(err)
	}
	if len(lives) != 2 || lives[0].Err() == nil || lives[1].Err() != nil {
		t.Fatalf("after a restart: first run's lifetime err %v, second's %v", lives[0].Err(), lives[1].Err())
	}
	if ctxs[0].Lifetime().Err() == nil {
		t.Error("a context of an ended run got a live lifetime")
	}
	if err := f.Update("fail"); err == nil {
		t.Fatal("the failing start succeeded")
	}
	if lives[2].Err() == nil {
		t.Error("a failed start's lifetime was not cancelled by the rollback")
	}

	// A scope's lifetime ends with the fiber that owns the scope.
	sc, err := ctxs[1].Scope("agent")
	if err == nil {
		t.Fatal("a scope of a stale context was created")
	}
	f2, err := h.Root().Plugin(host.Define("q", nil, func(c *host.Context) error {
		sc, err = c.Scope("agent")
		return err
	}), nil)
	if err != nil || f2.Err() != nil {
		t.Fatal(err, f2.Err())
	}
	sl := sc.Lifetime()
	if err := f2.Dispose(); err != nil {
		t.Fatal(err)
	}
	if sl.Err() == nil {
		t.Error("a scope's lifetime outlived its owner")
	}
	if h.Root().Lifetime().Err() != nil {
		t.Error("the root's lifetime ended before Close")
	}
}

func TestH14_RootLifetimeEndsWithClose(t *testing.T) {
	h := host.New()
	life := h.Root().Lifetime()
	_ = h.Close()
	if life.Err() == nil {
		t.Error("the root's lifetime outlived Close")
	}
}
