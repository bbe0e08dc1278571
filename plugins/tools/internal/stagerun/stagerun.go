// Package stagerun hands package toolstest the pipeline's own stage code,
// which package tools does not export: package tools sets these variables
// in an init function, and toolstest calls them, so a policy tested with
// toolstest meets exactly the rules the pipeline applies. The variables
// are typed any because this package cannot import tools; each comment
// gives the function type stored.
package stagerun

var (
	// RunGuard is a
	// func(g tools.Guard, exec *tools.Execution) (res tools.Result, denied bool):
	// stage 4 for one guard.
	RunGuard any
	// RunWrapper is a
	// func(ctx context.Context, exec *tools.Execution, w events.WaterfallListener[*tools.Execution, tools.Result]) tools.Result:
	// stages 6 and 7 with w as the only tools/execute wrapper (nil: none).
	RunWrapper any
)
