package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// ToolEntry is one shipped tool as the tool catalog lists it.
type ToolEntry struct {
	// Package is the Go import path of the plugin that registers the tool.
	Package string
	// Plugin is the plugin's name.
	Plugin string
	// Schema is the tool's wire schema, as the registry's Schemas method
	// returns it.
	Schema systemprompt.ToolSchema
	// Services lists the services the plugin requires (injects).
	Services []string
	// Config notes the configuration the plugin was booted with, and any
	// choice a deployment must make (empty: the defaults).
	Config string
	// Concurrency is how a batch schedules the tool's calls, as
	// tools.DescribeConcurrency words its declaration: "parallel",
	// "exclusive" or "per call". Empty means exclusive.
	Concurrency string
	// Annotations are the tool's behaviour hints as
	// tools.DescribeAnnotations words them ("read-only, closed-world
	// (trusted)"); empty when it declares none.
	Annotations string
}

// RenderTools renders the tool catalog: every shipped tool, grouped by
// package, with its description, how a batch schedules its calls, JSON
// Schema (indented) and the services its plugin needs. Deterministic:
// packages and tools sorted by name.
func RenderTools(entries []ToolEntry) (string, error) {
	sorted := append([]ToolEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Package != sorted[j].Package {
			return sorted[i].Package < sorted[j].Package
		}
		return sorted[i].Schema.Name < sorted[j].Schema.Name
	})
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n# Tool catalog\n\n")
	b.WriteString("Every tool the shipped plugins register, harvested by booting each tool plugin in-process " +
		"and reading the registry's `Schemas()`. The schema is exactly what the model receives as the tool's " +
		"`parameters`; execution-only fields (the timeout budget, presenters) never appear in it.\n\n")
	b.WriteString("The batch column says how `ExecuteBatch` (and Code Mode, for a program's calls) schedules the tool's calls: " +
		"`parallel` calls may run alongside other parallel calls of the same batch, an `exclusive` call is a barrier " +
		"(the calls before it finish first, the calls after it wait for it), and `per call` depends on the arguments.\n\n")
	fmt.Fprintf(&b, "%d tools.\n\n", len(sorted))
	b.WriteString("| tool | package | batch | description |\n|---|---|---|---|\n")
	for _, e := range sorted {
		fmt.Fprintf(&b, "| [`%s`](#%s) | `%s` | %s | %s |\n", e.Schema.Name, anchor(e.Schema.Name), e.Package, concurrency(e), firstSentence(e.Schema.Description))
	}
	pkg := ""
	for _, e := range sorted {
		if e.Package != pkg {
			pkg = e.Package
			fmt.Fprintf(&b, "\n## `%s`\n", pkg)
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", e.Schema.Name, oneLine(e.Schema.Description))
		fmt.Fprintf(&b, "- plugin: `%s`\n", e.Plugin)
		fmt.Fprintf(&b, "- in a batch: %s\n", concurrency(e))
		if e.Annotations != "" {
			fmt.Fprintf(&b, "- annotations: %s\n", e.Annotations)
		}
		if len(e.Services) > 0 {
			fmt.Fprintf(&b, "- requires services: %s\n", codeList(e.Services))
		} else {
			b.WriteString("- requires services: none\n")
		}
		if e.Config != "" {
			fmt.Fprintf(&b, "- configuration: %s\n", e.Config)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, e.Schema.Parameters, "", "  "); err != nil {
			return "", fmt.Errorf("catalog: tool %q: parameters are not JSON: %w", e.Schema.Name, err)
		}
		fmt.Fprintf(&b, "\n```json\n%s\n```\n", pretty.String())
	}
	return b.String(), nil
}

// concurrency is e's batch scheduling, exclusive when not given.
func concurrency(e ToolEntry) string {
	if e.Concurrency == "" {
		return "exclusive"
	}
	return e.Concurrency
}

func firstSentence(s string) string {
	s = oneLine(s)
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

func codeList(xs []string) string {
	ys := make([]string, len(xs))
	for i, x := range xs {
		ys[i] = "`" + x + "`"
	}
	return strings.Join(ys, ", ")
}
