// Package toolstest helps authors of tool plugins test them: it boots a
// host with the prompt service and the tool registry (the infrastructure
// every tool plugin injects), loads the plugins under test, and hands back
// the registry.
//
//	reg := toolstest.Boot(t, toolstest.Plugin{P: myplugin.Plugin, Config: myplugin.Config{}})
//	res := reg.Execute(ctx, tools.Call{ID: "c1", Name: "my_tool", Arguments: args})
//
// For the host's conformance check, pass [Setup] to hosttest.WithSetup.
package toolstest
