//go:build !dsh_nocodemode

package main

import (
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
)

// This file links Code Mode into dsh: tools modes code and both load codeModeRegistry (package
// plugins/codemode) and codeRuntimePlugin, the isolated code runtime (each program in a worker process; goja unless configured otherwise).
// Build with -tags dsh_nocodemode for a dsh without it (nocodemode.go): no JavaScript engine is
// linked then, and those modes are refused.

// codeRuntimePlugin is the code-runtime plugin tools modes code and both need, and
// codeModeRegistry the registry plugin that presents them (Code Mode).
var (
	codeRuntimePlugin host.Plugin = isolated.Plugin
	codeModeRegistry  host.Plugin = codemode.Plugin
)

// serveCodeWorker is the isolated runtime's worker entry: in a worker process it serves one run
// and exits. main calls it first.
func serveCodeWorker() { isolated.ServeIfWorker() }
