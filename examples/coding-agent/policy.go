package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// demoPolicy is the example's own policy plugin: one of each seam.
//   - a guard (monotonic): file tools may not touch .env files;
//   - a tools/pre-execute listener: a bash command that deletes asks first;
//   - a tools/post-execute listener: a result that shows a password is
//     blocked with corrective feedback, and context is attached;
//   - a tool with a short time budget, for the timeout policy.
var demoPolicy = host.Define("demo-policy", []host.ServiceKey{tools.Service}, func(c *host.Context) error {
	reg, err := tools.Service.Get(c)
	if err != nil {
		return err
	}
	if _, err := reg.Guard(c, func(e *tools.Execution) error {
		switch e.Name() {
		case "read", "write", "edit":
			if p := e.Arg("path").String(); path.Base(p) == ".env" {
				return errors.New("secrets files (.env) are off limits")
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		if e.Name() == "bash" && strings.Contains(e.Arg("command").String(), "rm ") {
			return tools.PreDecision{Kind: tools.Ask, Reason: "the command deletes files"}, nil
		}
		return next(ctx)
	}); err != nil {
		return err
	}
	if _, err := host.OnWaterfall(c, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next events.Next[tools.PostDecision]) (tools.PostDecision, error) {
		r := in.Result()
		for _, b := range r.Content {
			if b.Type == tools.ContentText && strings.Contains(b.Text, "password=") {
				return tools.PostDecision{
					Kind:              tools.Block,
					Feedback:          "The output contains a credential, so it was withheld. Describe the file without quoting secrets.",
					AdditionalContext: "Policy: never echo credentials from workspace files.",
				}, nil
			}
		}
		return next(ctx)
	}); err != nil {
		return err
	}
	// slow_check declares a typed output: its value is a checkReport (what
	// a Code Mode program or an MCP client gets as structured content),
	// rendered for the model as one line.
	slow, err := tools.Define(tools.TypedTool[struct{}, checkReport]{
		Name:        "slow_check",
		Description: "Run the project's slow consistency check.",
		Timeout:     200 * time.Millisecond,
		Execute: func(ctx context.Context, _ struct{}, _ *tools.Execution) (checkReport, error) {
			select {
			case <-time.After(5 * time.Second):
				return checkReport{Consistent: true}, nil
			case <-ctx.Done():
				return checkReport{}, fmt.Errorf("slow_check interrupted: %w", context.Cause(ctx))
			}
		},
		Render: func(r checkReport) ([]tools.Content, error) {
			if r.Consistent {
				return []tools.Content{tools.Text("consistent")}, nil
			}
			return []tools.Content{tools.Text("inconsistent: " + strings.Join(r.Problems, "; "))}, nil
		},
	})
	if err != nil {
		return err
	}
	if _, err = reg.Register(c, slow); err != nil {
		return err
	}
	// finish ends the task: its result asks the agent loop to conclude the
	// turn (no further model call), also from inside a Code Mode program.
	finish, err := tools.Define(tools.TypedTool[struct {
		Summary string `json:"summary" desc:"What was done, for the user."`
	}, tools.Output]{
		Name:        "finish",
		Description: "Conclude the task with a summary for the user; the session ends after this step.",
		Execute: func(_ context.Context, a struct {
			Summary string `json:"summary" desc:"What was done, for the user."`
		}, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("done: " + a.Summary)}, ConcludeTurn: true}, nil
		},
	})
	if err != nil {
		return err
	}
	_, err = reg.Register(c, finish)
	return err
})

// checkReport is slow_check's declared output.
type checkReport struct {
	Consistent bool     `json:"consistent"`
	Problems   []string `json:"problems,omitempty" jsonschema:"what is inconsistent, when something is"`
}
