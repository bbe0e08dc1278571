package jsengine

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// SourceName is the file name the program's frames carry in stack traces.
const SourceName = "program.ts"

// The wrapper makes the model's source the body of an async arrow function. The head ends with a
// newline so the model's line N is the wrapped line N+1 and columns are unchanged; the tail starts with
// one so a trailing line comment cannot swallow it.
const (
	wrapHead = "(async () => {\n"
	wrapTail = "\n})()"
)

// WrapProgram wraps src as the body of an async function and strips TypeScript with esbuild. It
// returns JavaScript that ends with an inline source map pointing at src itself (the wrapper's line
// already removed), or a syntax Failure positioned in src. It never panics. A src over the bounds
// (see checkProgramBounds) is refused before esbuild sees it, with a limit (or syntax) Failure: no
// text can overflow the transform's stack, and the JavaScript it returns is as shallow.
func WrapProgram(src string) (string, *coderuntime.Failure) {
	if _, f := CheckProgramBounds(src); f != nil {
		return "", f
	}
	res := transformWrapped(src)
	if len(res.Errors) > 0 {
		return "", esbuildFailure(src, res.Errors)
	}
	m, err := ShiftSourceMap(res.Map, -1, 1)
	if err != nil {
		// Positions degrade to the wrapped program's; still run it.
		m = res.Map
	} else {
		m = withBracketSegments(src, string(res.Code), m)
	}
	var b strings.Builder
	b.Grow(len(res.Code) + len(m)*4/3 + 64)
	b.Write(res.Code)
	b.WriteString("\n//# sourceMappingURL=data:application/json;base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(m))
	b.WriteByte('\n')
	return b.String(), nil
}

// transformWrapped is esbuild's transform of src wrapped (see WrapProgram).
func transformWrapped(src string) api.TransformResult {
	return api.Transform(wrapHead+src+wrapTail, api.TransformOptions{
		Loader: api.LoaderTS,
		Target: api.ES2020,
		// goja runs async functions but not async iteration: let esbuild lower it. goja cannot
		// parse import(), and no engine can load a module: lowered, import(name) is a promise that
		// rejects (require is not defined) on every engine, an exception like QuickJS's own.
		Supported:      map[string]bool{"async-generator": false, "for-await": false, "dynamic-import": false},
		Format:         api.FormatDefault,
		Sourcemap:      api.SourceMapExternal,
		SourcesContent: api.SourcesContentExclude,
		Sourcefile:     SourceName,
		LegalComments:  api.LegalCommentsNone,
		LogLevel:       api.LogLevelSilent,
		TsconfigRaw:    `{"compilerOptions":{"useDefineForClassFields":true,"verbatimModuleSyntax":false}}`,
	})
}

// esbuildFailure turns esbuild's first error into a syntax Failure positioned in the model's source.
func esbuildFailure(src string, msgs []api.Message) *coderuntime.Failure {
	f := &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: msgs[0].Text}
	if loc := msgs[0].Location; loc != nil {
		// esbuild's column counts bytes; the model counts characters.
		col := loc.Column
		if col >= 0 && col <= len(loc.LineText) {
			col = utf8.RuneCountInString(loc.LineText[:col])
		}
		f.Line, f.Column = ClampPosition(src, loc.Line-1, col+1)
		if loc.Line-1 > strings.Count(src, "\n")+1 {
			f.Message += " at the end of the program (an unclosed block, bracket, string or comment?)"
		}
	}
	if len(msgs) > 1 {
		f.Message = fmt.Sprintf("%s (and %d more)", f.Message, len(msgs)-1)
	}
	return f
}

// ClampPosition maps a wrapped-program position (already shifted to the model's lines) into the
// model's source: a position in the wrapper's head is unknown; one in its tail is the end of the
// source (where an unclosed block or string was found).
func ClampPosition(src string, line, col int) (int, int) {
	if line < 1 {
		return 0, 0
	}
	lines := strings.Split(src, "\n")
	if line > len(lines) {
		last := lines[len(lines)-1]
		return len(lines), utf8.RuneCountInString(last) + 1 // the column counts characters
	}
	return line, col
}

// InlineSourceMap returns the source map wrapProgram appended to js, or nil.
func InlineSourceMap(js string) []byte {
	const marker = "//# sourceMappingURL=data:application/json;base64,"
	i := strings.LastIndex(js, marker)
	if i < 0 {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(js[i+len(marker):]))
	if err != nil {
		return nil
	}
	return b
}

// MapGenerated maps a 1-based line and column of the generated program through a version-3 source
// map (as shiftSourceMap left it: original lines already the model's, columns 1-based) to the
// model's line and column: the mapping segment at or before the column on that line.
func MapGenerated(raw []byte, line, col int) (oline, ocol int, ok bool) {
	if raw == nil || line < 1 {
		return 0, 0, false
	}
	var m struct {
		Mappings string `json:"mappings"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return 0, 0, false
	}
	var srcLine, srcCol int // delta state across the whole mappings string
	for l, group := range strings.Split(m.Mappings, ";") {
		genCol := 0
		for _, seg := range strings.Split(group, ",") {
			if seg == "" {
				continue
			}
			fields, err := DecodeVLQ(seg)
			if err != nil {
				return 0, 0, false
			}
			genCol += fields[0]
			if len(fields) >= 4 {
				srcLine += fields[2]
				srcCol += fields[3]
				if l == line-1 && genCol <= col-1 {
					oline, ocol, ok = srcLine+1, srcCol, true
				}
			}
		}
		if l == line-1 {
			return oline, ocol, ok && oline >= 1
		}
	}
	return 0, 0, false
}

// ShiftSourceMap adds dLine to every original line and dCol to every original column in a version-3
// source map. Both fields are delta-encoded across the whole mappings string, so only the first
// segment that names a source changes. Segments that pointed at the wrapper's head end up at line -1,
// which goja reports as an unknown (line 0) position. The column shift makes goja's mapped columns
// 1-based like its unmapped ones (go-sourcemap returns the map's 0-based column).
func ShiftSourceMap(raw []byte, dLine, dCol int) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	var mappings string
	if err := json.Unmarshal(m["mappings"], &mappings); err != nil {
		return nil, err
	}
	start := 0
	for i := 0; i <= len(mappings); i++ {
		if i < len(mappings) && mappings[i] != ',' && mappings[i] != ';' {
			continue
		}
		seg := mappings[start:i]
		start = i + 1
		fields, err := DecodeVLQ(seg)
		if err != nil {
			return nil, err
		}
		if len(fields) < 4 {
			continue
		}
		fields[2] += dLine
		fields[3] += dCol
		shifted := mappings[:i-len(seg)] + EncodeVLQ(fields) + mappings[i:]
		b, err := json.Marshal(shifted)
		if err != nil {
			return nil, err
		}
		m["mappings"] = b
		return json.Marshal(m)
	}
	return raw, nil
}

const vlqChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// DecodeVLQ decodes one source-map segment's base64 VLQ fields.
func DecodeVLQ(seg string) ([]int, error) {
	var out []int
	shift, value := 0, 0
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte(vlqChars, seg[i])
		if d < 0 {
			return nil, fmt.Errorf("coderuntime: bad VLQ digit %q", seg[i])
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			if shift > 30 {
				return nil, errors.New("coderuntime: VLQ overflow")
			}
			continue
		}
		n := value >> 1
		if value&1 != 0 {
			n = -n
		}
		out = append(out, n)
		shift, value = 0, 0
	}
	if shift != 0 {
		return nil, errors.New("coderuntime: truncated VLQ")
	}
	return out, nil
}

// EncodeVLQ encodes fields as one source-map segment.
func EncodeVLQ(fields []int) string {
	var b strings.Builder
	for _, n := range fields {
		writeVLQ(&b, n)
	}
	return b.String()
}
