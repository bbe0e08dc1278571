// Command gencatalog generates the reference docs from the running code:
//
//	docs/cordis-catalog/events.md      every declared event (host + shipped plugins)
//	docs/tool-execution-pipeline.md    the pipeline diagram, from tools.Stages
//	docs/tool-catalog.md               every shipped tool's schema
//
// It boots every shipped plugin it can in-process (with its default
// configuration, or the required choice noted in the catalog), declares
// the events of those it cannot boot here (mcp-client needs a live
// server), harvests the descriptors and schemas, and renders them with
// package catalog. A test reads the shipped packages' source and fails
// when the catalog lacks an event one of them declares. `go generate ./...` runs
// it; with -check it writes nothing and exits 1 naming each stale file.
package main
