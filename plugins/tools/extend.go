package tools

import "github.com/dsh-go/dsh/host"

// DefinePlugin returns a plugin named name for code that works with the
// tool registry: it requires [Service] (so it stays pending until [Plugin]
// provides a registry, and restarts when the registry is replaced), then
// calls apply with the plugin's context and the registry. What apply
// registers through c (tools, guards, listeners, restrictions) is owned by
// the plugin's fiber and undone when it is disposed.
//
// It is host.Define with the registry injected and looked up for you.
func DefinePlugin(name string, apply func(c *host.Context, reg *Registry) error) host.Plugin {
	return host.Define(name, []host.ServiceKey{Service}, func(c *host.Context) error {
		reg, err := Service.Get(c)
		if err != nil {
			return err
		}
		return apply(c, reg)
	})
}

// TextOutput returns an [Output] whose model-facing content is one text
// block: the common return value of a tool body.
func TextOutput(text string) Output { return Output{Content: []Content{Text(text)}} }
