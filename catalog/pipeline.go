package catalog

import (
	"fmt"
	"strings"
)

// Stage is one phase of the tool execution pipeline, as the pipeline's own
// stage table describes it (gencatalog converts the table into these).
type Stage struct {
	// ID is a short identifier (letters, digits, '_'), used as the mermaid
	// node id.
	ID string
	// Title is what the diagram shows, e.g. "tools/pre-execute".
	Title string
	// Kind says what the phase is: "waterfall", "guard", "dispatch",
	// "observe", "internal".
	Kind string
	// Doc explains the phase's rules in one or two sentences.
	Doc string
	// OnFailure, when non-empty, labels the edge taken when the phase fails
	// or denies, and FailTo is the stage ID that edge leads to.
	OnFailure string
	FailTo    string
}

// RenderPipeline renders docs/tool-execution-pipeline.md: a mermaid
// flowchart of the stages in order (solid edges), with the failure and
// denial edges dashed and labelled, then a table of the stages' rules. An
// edge to an unknown stage is an error, so the diagram cannot silently
// drift from the table.
func RenderPipeline(stages []Stage) (string, error) {
	ids := map[string]bool{}
	for _, s := range stages {
		if s.ID == "" || strings.ContainsAny(s.ID, " -/\"[]{}()") {
			return "", fmt.Errorf("catalog: stage %q: invalid id %q", s.Title, s.ID)
		}
		if ids[s.ID] {
			return "", fmt.Errorf("catalog: duplicate stage id %q", s.ID)
		}
		ids[s.ID] = true
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n# Tool execution pipeline\n\n")
	b.WriteString("Every `Registry.Execute` call runs these stages in this order and yields exactly one result and " +
		"exactly one `tools/result` notification, whatever fails. Solid arrows are the normal path; dashed arrows are " +
		"where a denial or failure goes. A failure never skips `tools/post-execute` once the call has an execution, " +
		"and never skips `tools/result`. This diagram is generated from the stage table the pipeline itself runs " +
		"from (`tools.Stages`), so it cannot drift from the code.\n\n")
	b.WriteString("```mermaid\nflowchart TD\n")
	for _, s := range stages {
		fmt.Fprintf(&b, "    %s%s\n", s.ID, shape(s))
	}
	for i := 0; i+1 < len(stages); i++ {
		fmt.Fprintf(&b, "    %s --> %s\n", stages[i].ID, stages[i+1].ID)
	}
	for _, s := range stages {
		if s.FailTo == "" {
			continue
		}
		if !ids[s.FailTo] {
			return "", fmt.Errorf("catalog: stage %q fails to unknown stage %q", s.ID, s.FailTo)
		}
		fmt.Fprintf(&b, "    %s -.->|%q| %s\n", s.ID, s.OnFailure, s.FailTo)
	}
	b.WriteString("```\n\n| # | stage | kind | rules | on denial or failure |\n|---|---|---|---|---|\n")
	for i, s := range stages {
		fail := "—"
		if s.FailTo != "" {
			fail = fmt.Sprintf("%s → `%s`", s.OnFailure, titleOf(stages, s.FailTo))
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s |\n", i+1, s.Title, s.Kind, strings.ReplaceAll(oneLine(s.Doc), "|", `\|`), fail)
	}
	return b.String(), nil
}

func shape(s Stage) string {
	label := strings.ReplaceAll(s.Title, `"`, "'")
	switch s.Kind {
	case "waterfall":
		return fmt.Sprintf("[[\"%s\"]]", label)
	case "guard":
		return fmt.Sprintf("{\"%s\"}", label)
	case "observe":
		return fmt.Sprintf("([\"%s\"])", label)
	default:
		return fmt.Sprintf("[\"%s\"]", label)
	}
}

func titleOf(stages []Stage, id string) string {
	for _, s := range stages {
		if s.ID == id {
			return s.Title
		}
	}
	return id
}
