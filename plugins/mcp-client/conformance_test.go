package mcpclient_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// TestConformance: the plugin meets the host's contract (restart when the
// registry is replaced, loading through an agent scope, disposal while
// pending, twice, during a dispatch) and leaves no tool, effect or
// goroutine behind.
func TestConformance(t *testing.T) {
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo", "other")
	hosttest.Run(t, hosttest.Case{Plugin: mcpclient.Plugin, Config: mcpclient.Config{Name: "mem", Dial: ms.dial}, Setup: toolstest.Setup})
	ms.waitSessionsEnded(t)
}

func TestConformanceStdio(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: mcpclient.Plugin, Config: everything(t, "ev"), Setup: toolstest.Setup})
}
