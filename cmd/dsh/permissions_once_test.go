package main

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The gateway installs the permission rules once, through the
// permissions plugin itself (with a permissions.Live for reloads): one
// fiber named "permissions" owning one tools/pre-execute listener, one
// tools/post-execute listener and one guard.
func TestGateway_PermissionsInstalledOnceByThePlugin(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{"permissions":{"deny":["mcp__fs"]}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := openGateway(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var fibers []host.EffectInfo
	for _, e := range g.root.Fiber().Effects() {
		if e.Kind == host.EffectPlugin && e.Name == permissions.Name {
			fibers = append(fibers, e)
		}
	}
	if len(fibers) != 1 {
		t.Fatalf("%d permissions fibers, want 1", len(fibers))
	}
	kinds := map[host.EffectKind]int{}
	for _, e := range fibers[0].Children {
		kinds[e.Kind]++
	}
	if kinds[host.EffectListener] != 2 || kinds[tools.EffectGuard] != 1 || len(fibers[0].Children) != 3 {
		t.Errorf("the permissions fiber owns %v", fibers[0].Children)
	}
	if g.pol == nil || !g.pol.Load().DeniesTool("mcp__fs__write_file") {
		t.Error("the live policy is not the config's")
	}
}
