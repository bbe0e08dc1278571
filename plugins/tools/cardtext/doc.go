// Package cardtext renders the tools' presentation cards (tools.CallView,
// tools.ResultView) as plain terminal text: the approval prompt and the
// example agent use it, and so can any CLI. It sanitizes everything that
// comes from a model or a tool, so text cannot smuggle terminal escape
// sequences or bidirectional overrides onto a person's screen.
package cardtext
