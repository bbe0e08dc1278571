package catalog_test

import (
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/catalog"
)

// RenderPipeline turns a stage table into a mermaid flowchart (solid edges
// in order, dashed ones for denials and failures) and a table of the rules.
func ExampleRenderPipeline() {
	stages := []catalog.Stage{
		{ID: "pre", Title: "tools/pre-execute", Kind: "waterfall", Doc: "Allow, deny or ask.", OnFailure: "deny", FailTo: "post"},
		{ID: "exec", Title: "tools/execute", Kind: "waterfall", Doc: "Around dispatch."},
		{ID: "post", Title: "tools/post-execute", Kind: "waterfall", Doc: "Accept or block."},
	}
	md, err := catalog.RenderPipeline(stages)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "| 1 ") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// pre[["tools/pre-execute"]]
	// exec[["tools/execute"]]
	// post[["tools/post-execute"]]
	// pre --> exec
	// exec --> post
	// pre -.->|"deny"| post
	// | 1 | `tools/pre-execute` | waterfall | Allow, deny or ask. | deny → `tools/post-execute` |
}
