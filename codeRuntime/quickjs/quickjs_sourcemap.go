package quickjs

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// sourceMapMarker starts the inline source map wrapProgram appends to the JavaScript it returns.
const sourceMapMarker = "\n//# sourceMappingURL=data:application/json;base64,"

// qjsSourceMap maps positions in the JavaScript a QuickJS VM ran back to the model's TypeScript.
// It decodes the map (produced by wrapProgram, original lines already shifted to the model's source
// and original columns 1-based) only when a position is first asked for.
type qjsSourceMap struct {
	raw  string // the base64 map
	once sync.Once
	// lines[i] are the segments of generated line i+1, by generated column.
	lines [][]qjsSegment
}

type qjsSegment struct {
	genCol  int // 0-based
	line    int // 1-based line in the model's source (< 1: the wrapper)
	col     int // 1-based
	hasOrig bool
}

// splitSourceMap cuts the inline source map off wrapProgram's output.
func splitSourceMap(js string) (string, *qjsSourceMap) {
	i := strings.LastIndex(js, sourceMapMarker)
	if i < 0 {
		return js, &qjsSourceMap{}
	}
	return js[:i+1], &qjsSourceMap{raw: strings.TrimSpace(js[i+len(sourceMapMarker):])}
}

func (m *qjsSourceMap) decode() {
	if m.raw == "" {
		return
	}
	b, err := base64.StdEncoding.DecodeString(m.raw)
	if err != nil {
		return
	}
	var sm struct {
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(b, &sm); err != nil {
		return
	}
	lines, err := decodeMappings(sm.Mappings)
	if err != nil {
		return
	}
	m.lines = lines
}

// decodeMappings decodes a version-3 "mappings" string into segments per generated line.
func decodeMappings(mappings string) ([][]qjsSegment, error) {
	var lines [][]qjsSegment
	var src, oline, ocol int
	for _, l := range strings.Split(mappings, ";") {
		var segs []qjsSegment
		gcol := 0
		for _, s := range strings.Split(l, ",") {
			if s == "" {
				continue
			}
			f, err := jsengine.DecodeVLQ(s)
			if err != nil {
				return nil, err
			}
			if len(f) == 0 {
				continue
			}
			gcol += f[0]
			seg := qjsSegment{genCol: gcol}
			if len(f) >= 4 {
				src += f[1]
				oline += f[2]
				ocol += f[3]
				seg.hasOrig, seg.line, seg.col = true, oline+1, ocol
			} else if len(f) != 1 {
				return nil, errors.New("coderuntime: malformed source map segment")
			}
			segs = append(segs, seg)
		}
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].genCol < segs[j].genCol })
		lines = append(lines, segs)
	}
	_ = src
	return lines, nil
}

// position maps a 1-based line and column of the generated JavaScript to the model's source, or
// returns 0, 0 when the position is not in the model's source.
func (m *qjsSourceMap) position(line, col int) (int, int) {
	if m == nil {
		return 0, 0
	}
	m.once.Do(m.decode)
	if line < 1 || line > len(m.lines) {
		return 0, 0
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].genCol > col-1 })
	if i == 0 {
		if len(segs) == 0 {
			return 0, 0
		}
		i = 1 // before the first mapped column: the first segment of the line
	}
	s := segs[i-1]
	if !s.hasOrig || s.line < 1 {
		return 0, 0
	}
	return s.line, s.col
}
