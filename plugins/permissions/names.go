package permissions

import (
	"errors"
	"fmt"
	"strings"
)

// MaxServerNameLen is the longest server name [CheckServerName] accepts:
// "mcp__<server>__" and one character of the tool's name must fit in the
// part of a 64-byte tool name that normalization keeps (a longer name
// would be cut into its server part, and a rule on the server would not
// match its tools).
const MaxServerNameLen = 47

// CheckServerName reports why name cannot be an MCP server's name under
// which its tools are named mcp__<name>__<tool>, or nil. A name is 1 to
// [MaxServerNameLen] characters of [A-Za-z0-9_-], without "__" and not
// ending in "_": so the server part of every tool name is the text before
// its first "__" after "mcp__", and no server's prefix "mcp__a__" is
// another's ("a_" would make mcp__a___x the tool "_x" of a, or "x" of
// a_, and the rule mcp__a would cover both).
func CheckServerName(name string) error {
	switch {
	case name == "":
		return errors.New("a server name cannot be empty")
	case len(name) > MaxServerNameLen:
		return fmt.Errorf("a server name is at most %d characters (tool names mcp__<server>__<tool> are cut at 64)", MaxServerNameLen)
	case strings.Contains(name, "__"):
		return errors.New(`a server name must not contain "__" (the separator of mcp__<server>__<tool>)`)
	case strings.HasSuffix(name, "_"):
		return errors.New(`a server name must not end in "_" (mcp__a___x would be a tool of both a and a_)`)
	}
	for i := 0; i < len(name); i++ {
		if !isKeyByte(name[i]) {
			return errors.New("a server name is made of [A-Za-z0-9_-] (it becomes part of tool names mcp__<server>__<tool>)")
		}
	}
	return nil
}

// DeniesTool reports whether a deny rule without conditions names tool
// ("mcp__fs__write_file", "mcp__remote", "Bash", "Bash(*)"): every call
// of it is denied, so it need not be offered to a model or client at
// all, as Claude Code removes such a tool from the model's context. A
// tool with only conditional deny rules is still offered.
func (p *Policy) DeniesTool(tool string) bool {
	for i := range p.deny {
		if r := &p.deny[i]; r.kind == kindName && r.appliesTo(tool) {
			return true
		}
	}
	return false
}
