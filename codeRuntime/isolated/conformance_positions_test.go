package isolated

import (
	"context"
	"errors"
	"strings"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// TestSyntaxErrorAtTheEndCountsCharacters: a syntax error at the end of the program, after
// multi-byte text on its last line, is reported at the column after its last character, on every
// engine (the column counted bytes).
func TestSyntaxErrorAtTheEndCountsCharacters(t *testing.T) {
	for _, combo := range conformanceCombos {
		if combo.isolation != coderuntime.IsolationNone {
			continue // the same compile step, in a worker
		}
		rt := combo.newRuntime(t, conformanceConfig(budgetNone))
		for _, src := range []string{"const s = 'ééé'; foo(", "const s = 'x'\nconst t = '日本'; (1 +"} {
			_, err := rt.Run(context.Background(), coderuntime.Program{Source: src})
			var f *coderuntime.Failure
			wantLine := strings.Count(src, "\n") + 1
			last := src[strings.LastIndex(src, "\n")+1:]
			wantCol := len([]rune(last)) + 1
			if !errors.As(err, &f) || f.Kind != coderuntime.KindSyntax || f.Line != wantLine || f.Column != wantCol {
				t.Errorf("%s: %q: Run = %v; want a syntax failure at line %d, column %d", combo.name, src, err, wantLine, wantCol)
			}
		}
	}
}
