//go:build dsh_nocodemode

package main

import "github.com/dsh-go/dsh/host"

// A dsh built with -tags dsh_nocodemode has no Code Mode support: no JavaScript engine is linked,
// and tools modes code and both are refused (see codemode.go for the default build).

// codeRuntimePlugin and codeModeRegistry are nil: this build has no Code Mode.
var codeRuntimePlugin, codeModeRegistry host.Plugin

// serveCodeWorker does nothing: this build has no worker processes.
func serveCodeWorker() {}
