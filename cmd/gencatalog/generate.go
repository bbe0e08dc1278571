package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/catalog"
	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/codemode"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/spill"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
)

// File is one generated file, its path relative to the module root.
type File struct {
	Path    string
	Content []byte
}

// shipped is one shipped plugin with the configuration it is booted with.
type shipped struct {
	plugin host.Plugin
	config func() (any, func(), error) // config, cleanup
	note   string                      // the configuration note for the tool catalog
}

func static(v any) func() (any, func(), error) {
	return func() (any, func(), error) { return v, func() {}, nil }
}

// infrastructure is what every tool plugin needs loaded beside it.
var infrastructure = []shipped{
	{plugin: tools.Plugin, config: static(tools.Config{Mode: tools.Native})},
}

// policies are the shipped non-tool plugins.
var policies = []shipped{
	{plugin: systemprompt.Plugin, config: static(systemprompt.Config{})},
	{plugin: isolated.Plugin, config: static(coderuntime.Config{})},
	{plugin: approval.Plugin, config: static(approval.Config{})},
	{plugin: timeoutpolicy.Plugin, config: static(timeoutpolicy.Config{})},
	{plugin: spill.Plugin, config: static(spill.Config{})},
}

// toolPlugins are the shipped tool plugins.
var toolPlugins = []shipped{
	{plugin: toolbash.Plugin, config: static(toolbash.Config{}), note: "defaults (`/bin/sh`, 64 KiB output cap, 2-minute budget)"},
	{plugin: toolfs.Plugin, note: "`Root` is required: the workspace directory the tools are confined to (booted here with a temporary directory)",
		config: func() (any, func(), error) {
			dir, err := os.MkdirTemp("", "gencatalog-")
			if err != nil {
				return nil, nil, err
			}
			return toolfs.Config{Root: dir}, func() { os.RemoveAll(dir) }, nil
		}},
}

// declaredOnly are the events of shipped plugins that the catalog's boot
// does not load (they need a live MCP server, a peer or a session): the
// catalog declares them directly. TestCatalogListsEveryShippedEvent fails
// when a shipped package declares an event the catalog lacks.
var declaredOnly = []events.Handle{mcpclient.StatusChanged, codemode.CodeDispatchLog}

// boot loads ps into a fresh host and returns it with a cleanup.
func boot(ps []shipped) (*host.Host, func(), error) {
	h := host.New()
	var cleanups []func()
	done := func() {
		_ = h.Close()
		for _, c := range cleanups {
			c()
		}
	}
	for _, p := range ps {
		cfg, cleanup, err := p.config()
		if err != nil {
			done()
			return nil, nil, err
		}
		cleanups = append(cleanups, cleanup)
		if _, err := h.Root().Plugin(p.plugin, cfg); err != nil {
			done()
			return nil, nil, err
		}
	}
	return h, done, nil
}

// Generate renders every generated file.
func Generate(root string) ([]File, error) {
	all := slices.Concat(infrastructure, policies, toolPlugins)
	h, done, err := boot(all)
	if err != nil {
		return nil, err
	}
	if err := h.Declare(declaredOnly...); err != nil {
		done()
		return nil, err
	}
	eventsMD := catalog.RenderEvents(h.Events(), root)
	done()

	entries, err := toolEntries()
	if err != nil {
		return nil, err
	}
	toolsMD, err := catalog.RenderTools(entries)
	if err != nil {
		return nil, err
	}
	toolsMD += catalog.RenderACP(acpRows())
	pipelineMD, err := catalog.RenderPipeline(pipelineStages())
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: "docs/cordis-catalog/events.md", Content: []byte(eventsMD)},
		{Path: "docs/tool-catalog.md", Content: []byte(toolsMD)},
		{Path: "docs/tool-execution-pipeline.md", Content: []byte(pipelineMD)},
	}, nil
}

// toolEntries boots each tool plugin on its own (beside the infrastructure)
// so every tool is attributed to the plugin that registered it.
func toolEntries() ([]catalog.ToolEntry, error) {
	var out []catalog.ToolEntry
	for _, tp := range toolPlugins {
		h, done, err := boot(append(slices.Clone(infrastructure), tp))
		if err != nil {
			return nil, err
		}
		reg, err := tools.Service.Get(h.Root())
		if err != nil {
			done()
			return nil, err
		}
		name := tp.plugin.(host.Named).Name()
		for _, t := range reg.Visible("") {
			out = append(out, catalog.ToolEntry{
				Package:     pkgPath(tp.plugin),
				Plugin:      name,
				Schema:      t.Schema(),
				Services:    injects(tp.plugin),
				Config:      tp.note,
				Concurrency: tools.DescribeConcurrency(t.ConcurrencyRule()),
				Annotations: tools.DescribeAnnotations(t.Annotations()),
			})
		}
		done()
	}
	transport, err := runCodeEntry()
	if err != nil {
		return nil, err
	}
	return append(out, transport), nil
}

// runCodeEntry harvests the registry's own Code Mode transport, run_code,
// by booting the registry in code mode beside a code runtime.
func runCodeEntry() (catalog.ToolEntry, error) {
	code := []shipped{
		{plugin: isolated.Plugin, config: static(coderuntime.Config{})},
		{plugin: codemode.Plugin, config: static(tools.Config{Mode: tools.Code})},
	}
	h, done, err := boot(code)
	if err != nil {
		return catalog.ToolEntry{}, err
	}
	defer done()
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		return catalog.ToolEntry{}, err
	}
	for _, t := range reg.Visible("") {
		if t.Name() == codemode.RunCodeName {
			return catalog.ToolEntry{
				Package:     pkgPath(codemode.Plugin),
				Plugin:      codemode.Plugin.(host.Named).Name(),
				Schema:      t.Schema(),
				Services:    injects(codemode.Plugin),
				Config:      "contributed by the registry itself under tools mode `code` or `both` (Code Mode: load codemode.Plugin) (reserved: it cannot be registered, shadowed or restricted); needs the `" + coderuntime.Service.Name() + "` service with language typescript",
				Concurrency: tools.DescribeConcurrency(t.ConcurrencyRule()),
			}, nil
		}
	}
	return catalog.ToolEntry{}, fmt.Errorf("tools mode code contributed no %s schema", codemode.RunCodeName)
}

// injects returns the names of the services p requires (see host.Injector).
func injects(p host.Plugin) []string {
	inj, ok := p.(host.Injector)
	if !ok {
		return nil
	}
	var names []string
	for _, k := range inj.Inject() {
		names = append(names, k.Name())
	}
	return names
}

func pkgPath(p host.Plugin) string {
	t := reflect.TypeOf(p)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

func stageID(name string) string { return strings.ReplaceAll(name, "-", "_") }

// pipelineStages converts the pipeline's own stage table.
func pipelineStages() []catalog.Stage {
	var out []catalog.Stage
	for _, s := range tools.Stages {
		kind := "internal"
		switch {
		case s.Event == tools.ResultEvent.Descriptor().Name:
			kind = "observe"
		case s.Event != "":
			kind = "waterfall"
		case s.Name == "guards":
			kind = "guard"
		case s.Name == "dispatch":
			kind = "dispatch"
		}
		title := s.Name
		if s.Event != "" {
			title = s.Event
		}
		out = append(out, catalog.Stage{ID: stageID(s.Name), Title: title, Kind: kind, Doc: s.Doc, OnFailure: s.OnFailure, FailTo: stageID(s.FailTo)})
	}
	return out
}

// acpRows converts plugins/acp's card → ACP field mapping.
func acpRows() []catalog.ACPRow {
	var out []catalog.ACPRow
	for _, m := range acp.Mapping() {
		out = append(out, catalog.ACPRow{Update: m.Update, Source: m.Source, Field: m.Field, Note: m.Note})
	}
	return out
}
