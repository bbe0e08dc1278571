package goja

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// compile wraps, transforms and compiles src for goja. The returned program is immutable and may
// run in any goja.Runtime.
//
// Beyond the bounds wrapProgram checks, goja refuses what it would run wrongly or without bound:
// BigInt literals (goja's BigInt operators allocate without limit in one step, and the BigInt global
// is removed) and Unicode property escapes (goja's regular expressions cannot match them).
//
// pre, when not empty, is WrapProgram(src) computed ahead (by the isolated runtime's parent); the
// bounds scan and the refusals still run on src.
func compile(src string, pre jsengine.Transformed) (*goja.Program, *coderuntime.Failure) {
	scan, f := jsengine.CheckProgramBounds(src)
	if f != nil {
		return nil, f
	}
	if f := gojaRefusal(scan); f != nil {
		return nil, f
	}
	js := pre.JS
	if js == "" {
		if js, f = jsengine.WrapProgram(src); f != nil {
			return nil, f
		}
	}
	ast, err := goja.Parse(jsengine.SourceName, withGojaColumns(js), parser.WithSourceMapLoader(refuseSourceMap))
	if err != nil {
		// The parser stops before it reaches the source map at the end: a generated position.
		return nil, gojaSyntaxFailure(src, js, err)
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		// The compiler (a bad regular expression literal) reports through the source map the
		// parser read: already the model's position.
		return nil, gojaCompileFailure(src, err)
	}
	return prg, nil
}

// refuseSourceMap stops goja from ever reading a source map from the file system; ours is inline.
func refuseSourceMap(string) ([]byte, error) {
	return nil, errors.New("coderuntime: external source maps are not loaded")
}

var gojaPosRe = regexp.MustCompile(`(\d+):(\d+)`)

// gojaSyntaxFailure reports an error goja found in js, esbuild's output (a feature goja lacks, or an
// early error esbuild let through). goja's parser reports positions in js ("program.ts: Line L:C"),
// so the position is mapped back to the model's source through js's inline source map; a position
// the map does not cover is left unknown rather than misreported.
func gojaSyntaxFailure(src, js string, err error) *coderuntime.Failure {
	msg := err.Error()
	f := &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: msg, Cause: err}
	if i := strings.Index(msg, jsengine.SourceName+":"); i >= 0 {
		if m := gojaPosRe.FindStringSubmatch(msg[i+len(jsengine.SourceName)+1:]); m != nil {
			l, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			if ol, oc, ok := jsengine.MapGenerated(jsengine.InlineSourceMap(js), l, c); ok {
				f.Line, f.Column = jsengine.ClampPosition(src, ol, oc)
			}
		}
	}
	return f
}

// gojaCompileFailure turns an error of goja's compiler into a syntax Failure: its position is the
// model's already (mapping it again would move it).
func gojaCompileFailure(src string, err error) *coderuntime.Failure {
	msg := err.Error()
	f := &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: msg, Cause: err}
	if i := strings.LastIndex(msg, jsengine.SourceName+":"); i >= 0 {
		if m := gojaPosRe.FindStringSubmatch(msg[i+len(jsengine.SourceName)+1:]); m != nil {
			l, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			f.Line, f.Column = jsengine.ClampPosition(src, l, c)
		}
	}
	return f
}

// gojaRefusal is the syntax Failure for a text with a BigInt literal or a Unicode property escape.
func gojaRefusal(scan jsengine.SourceScan) *coderuntime.Failure {
	switch {
	case scan.BigInt != nil:
		return &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: bigintUnsupported, Line: scan.BigInt.Line, Column: scan.BigInt.Col}
	case scan.UnicodeProperty != nil:
		return &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: unicodePropertyUnsupported, Line: scan.UnicodeProperty.Line, Column: scan.UnicodeProperty.Col}
	}
	return nil
}

// Messages of what goja refuses.
const (
	bigintUnsupported          = "BigInt is not supported by this runtime: its arithmetic cannot be bounded"
	unicodePropertyUnsupported = "Unicode property escapes (\\p{...}) are not supported by this runtime's regular expressions"
)
