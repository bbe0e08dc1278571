package acp_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

// bridgeListeners counts the listeners on the three events the bridge
// listens to.
func bridgeListeners(r *rig) int {
	l := r.h.Stats().Listeners
	return l[tools.PreExecute.Descriptor().Name] + l[tools.ExecuteEvent.Descriptor().Name] + l[tools.ResultEvent.Descriptor().Name]
}

// TestBridge_ListensOnlyWhileASessionIsAttached: a loaded bridge without
// sessions has no listener, so calls cost what they cost without the
// plugin; attaching registers its three listeners, closing the last
// session removes them, and a session attached again is reported as the
// first was.
func TestBridge_ListensOnlyWhileASessionIsAttached(t *testing.T) {
	r := newRig(t, acp.Config{})
	idle := bridgeListeners(r)
	peer := &fakePeer{}
	s := attach(t, r, peer)
	if got := bridgeListeners(r); got != idle+3 {
		t.Fatalf("with a session: %d listeners, want %d", got, idle+3)
	}
	s.Close()
	<-s.Done()
	if got := bridgeListeners(r); got != idle {
		t.Fatalf("after the last session closed: %d listeners, want %d", got, idle)
	}
	peer = &fakePeer{}
	s = attach(t, r, peer)
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	if res := r.reg.Execute(context.Background(), readCall("r1")); res.IsError {
		t.Fatal(res)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if updates, _ := peer.recorded(); len(updates) != 3 {
		t.Fatalf("re-attached session got %d updates, want 3 (pending, in progress, completed): %v", len(updates), summaries(r.ws, updates))
	}
}
