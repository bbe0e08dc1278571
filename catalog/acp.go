package catalog

import (
	"fmt"
	"strings"
)

// ACPRow is one row of the card → ACP field mapping that plugins/acp
// implements (its acp.Mapping): the ACP update the field is sent in, where
// the value comes from (a presentation-card field, or the call and its
// result), the ACP field it fills, and how it is converted.
type ACPRow struct {
	Update string
	Source string
	Field  string
	Note   string
}

// RenderACP renders the card → ACP mapping as a section of the tool
// catalog: a heading, a short introduction and one table per ACP update,
// in the order the rows first name them, rows kept in their given order.
// Deterministic for a given input; it never fails.
func RenderACP(rows []ACPRow) string {
	var b strings.Builder
	b.WriteString("\n## Presentation cards over ACP\n\n")
	b.WriteString("How `plugins/acp` shows each tool call to an Agent Client Protocol client: the call and result " +
		"cards a tool presents (`presentCall` / `presentResult`) become the `session/update` notifications " +
		"`tool_call` (status `pending`) and `tool_call_update` (`in_progress`, then `completed` or `failed`), " +
		"and an approval ask becomes `session/request_permission`. Each table row names the source field and the ACP field it fills.\n")
	var order []string
	byUpdate := map[string][]ACPRow{}
	for _, r := range rows {
		if _, ok := byUpdate[r.Update]; !ok {
			order = append(order, r.Update)
		}
		byUpdate[r.Update] = append(byUpdate[r.Update], r)
	}
	for _, u := range order {
		fmt.Fprintf(&b, "\n### `%s`\n\n| source | ACP field | conversion |\n|---|---|---|\n", cell(u))
		for _, r := range byUpdate[u] {
			note := cell(r.Note)
			if note == "" {
				note = "as is"
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", cell(r.Source), cell(r.Field), note)
		}
	}
	return b.String()
}

// cell makes s safe inside one markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
