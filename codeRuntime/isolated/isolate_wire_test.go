package isolated

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

func TestIsolateWireRoundTrips(t *testing.T) {
	run := runRequest{Source: "return 1", Namespace: "ns", Names: []string{"a", "b c"}, Timeout: 3 * time.Second}
	if got, err := decodeRunRequest(run.encode()); err != nil || !reflect.DeepEqual(got, run) {
		t.Errorf("run request: %+v, %v", got, err)
	}
	for _, a := range []jsengine.Answer{
		{Seq: 7, Result: []byte(`{"x":1}`)},
		{Seq: 8, Err: true, Message: "m", Code: "C", Name: "N"},
		{Seq: 9, Err: true, Message: "m", Details: map[string]string{"tool": "t"}},
	} {
		got, err := decodeAnswer(encodeAnswer(a))
		if a.Result == nil && !a.Err {
			a.Result = []byte{}
		}
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Errorf("answer %+v: %+v, %v", a, got, err)
		}
	}
	c := callFrame{Seq: 3, Name: "f", Args: []byte(`[1]`)}
	if got, err := decodeCall(c.encode()); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("call: %+v, %v", got, err)
	}
	for _, o := range []outcome{
		{Status: outcomeResult, Value: []byte(`1`), Logs: []coderuntime.Log{{Level: "log", Text: "a"}, {Level: "warn", Text: ""}}},
		{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindTimeout, Message: "t", Line: 2, Column: 3}, CauseCode: causeCPU},
		{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindException, Message: "x"}, CauseCode: causeOther, CauseText: "why", Logs: []coderuntime.Log{{Level: "error", Text: "e"}}},
		{Status: outcomeInvalid, Invalid: "bad"},
	} {
		got, err := decodeOutcome(o.encode())
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Errorf("outcome %+v: %+v, %v", o, got, err)
		}
	}
	_, f := outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindTimeout}, CauseCode: causeCPU}.result()
	if !errors.Is(f, coderuntime.ErrCPUBudget) {
		t.Errorf("the cause of a CPU timeout is %v", f)
	}
}

// Truncated, trailing and oversized input is refused, never read past its end.
func TestIsolateWireRejectsMalformedFrames(t *testing.T) {
	body := callFrame{Seq: 1, Name: "f", Args: []byte(`{}`)}.encode()
	if _, err := decodeCall(body[:len(body)-1]); !errors.Is(err, errProtocol) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := decodeCall(append(body, 0)); !errors.Is(err, errProtocol) {
		t.Errorf("trailing byte: %v", err)
	}
	var buf bytes.Buffer
	_ = writeFrame(&buf, frameCall, body)
	limit := func(t byte) int {
		if t == frameCall {
			return len(body) - 1
		}
		return -1
	}
	if _, _, err := readFrame(bytes.NewReader(buf.Bytes()), limit); !errors.Is(err, errFrameTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader(buf.Bytes()), func(byte) int { return -1 }); !errors.Is(err, errProtocol) {
		t.Errorf("unexpected type: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader(buf.Bytes()[:buf.Len()-1]), func(byte) int { return 1 << 20 }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut short: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0, 'C'}), func(byte) int { return 1 << 20 }); !errors.Is(err, errProtocol) {
		t.Errorf("empty frame: %v", err)
	}
}

// FuzzIsolateWire: no input makes a decoder panic, over-read or allocate beyond its input; what
// decodes re-encodes to an equal message.
func FuzzIsolateWire(f *testing.F) {
	f.Add(runRequest{Source: "x", Names: []string{"a"}, Timeout: 1}.encode())
	f.Add(encodeAnswer(jsengine.Answer{Seq: 1, Err: true, Details: map[string]string{"a": "b"}}))
	f.Add(callFrame{Seq: 1, Name: "f", Args: []byte("{}")}.encode())
	f.Add(outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindLimit}, Logs: []coderuntime.Log{{Level: "log", Text: "x"}}}.encode())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeRunRequest(b); err == nil {
			if m2, err := decodeRunRequest(m.encode()); err != nil || !reflect.DeepEqual(m, m2) {
				t.Fatalf("run request does not round-trip: %+v %+v %v", m, m2, err)
			}
		}
		if m, err := decodeAnswer(b); err == nil {
			if m2, err := decodeAnswer(encodeAnswer(m)); err != nil || m2.Seq != m.Seq || m2.Err != m.Err || len(m2.Details) != len(m.Details) {
				t.Fatalf("answer does not round-trip: %+v %+v %v", m, m2, err)
			}
		}
		if m, err := decodeCall(b); err == nil {
			if m2, err := decodeCall(m.encode()); err != nil || !reflect.DeepEqual(m, m2) {
				t.Fatalf("call does not round-trip: %+v %+v %v", m, m2, err)
			}
		}
		if m, err := decodeOutcome(b); err == nil {
			if m2, err := decodeOutcome(m.encode()); err != nil || m2.Status != m.Status || len(m2.Logs) != len(m.Logs) {
				t.Fatalf("outcome does not round-trip: %+v %+v %v", m, m2, err)
			}
			_, _ = m.result()
		}
		r := bytes.NewReader(b)
		for {
			_, body, err := readFrame(r, func(byte) int { return 64 })
			if err != nil {
				break
			}
			if len(body) > 64 {
				t.Fatalf("a %d-byte body past the limit", len(body))
			}
		}
	})
}
