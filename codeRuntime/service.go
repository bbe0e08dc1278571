package coderuntime

import "github.com/dsh-go/dsh/host"

// Service is the service a code-runtime plugin provides its [Runtime] through (the shipped one is
// isolated.Plugin, package codeRuntime/isolated). Consumers read it non-reactively:
//
//	rt, ok := coderuntime.Service.Lookup(c)
var Service = host.NewService[Runtime]("code-runtime")
