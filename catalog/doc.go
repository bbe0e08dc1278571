// Package catalog generates the project's reference documentation from the
// running code: the event catalog (every event any shipped plugin declares,
// from its descriptor), the tool execution pipeline diagram (from the stage
// table the pipeline runs from) and the tool catalog (from each shipped tool
// plugin's schemas and annotations, followed by the presentation-card → ACP
// field mapping that plugins/acp states as data). Nothing in docs/cordis-catalog, docs/tool-catalog.md
// or docs/tool-execution-pipeline.md is written by hand.
//
// The renderers are pure functions of their inputs, with golden tests in
// testdata/; cmd/gencatalog boots the plugins, calls them and writes (or,
// with -check, compares) the files.
package catalog

//go:generate go run ../cmd/gencatalog -root ..
