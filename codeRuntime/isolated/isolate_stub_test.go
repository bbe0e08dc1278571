package isolated

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// stubEnv selects a misbehaving worker in this package's test binary (see serveIfWorker).
const stubEnv = "DSH_CODERUNTIME_TEST_STUB"

// gcReportEnv names the directory in which the stub mode "gc-percent" reports the worker's GOGC
// (see reportGCPercent).
const gcReportEnv = "DSH_CODERUNTIME_TEST_GC_REPORT"

// TestMain makes this test binary a worker when started as one, with the stub workers.
func TestMain(m *testing.M) {
	serveIfWorker(stubWorker)
	os.Exit(m.Run())
}

// spinSink and eaten keep the stub's busy work from being optimized away.
var (
	spinSink int
	eaten    [][]byte
)

// stubWorker plays a broken worker for the mode named by stubEnv; false lets the real worker run.
func stubWorker(in, out *os.File) bool {
	mode := os.Getenv(stubEnv)
	if mode == "" {
		return false
	}
	if mode == "gc-percent" { // the real worker, reporting its GOGC (see reportGCPercent)
		reportGCPercent(os.Getenv(gcReportEnv))
		return false
	}
	hello := func(version uint64) {
		var e enc
		e.uint(version)
		e.uint(uint64(os.Getpid()))
		_ = writeFrame(out, frameHello, e.b)
	}
	if mode == "bad-hello" {
		hello(protocolVersion + 1)
		select {}
	}
	hello(protocolVersion)
	if _, _, err := readFrame(in, workerFrameLimit); err != nil {
		return true
	}
	switch mode {
	case "junk": // bytes that are no frame at all
		_, _ = out.Write([]byte("\x00\x00\x00\x03Zjunk and more junk"))
	case "bad-call": // a call frame whose body does not decode
		_ = writeFrame(out, frameCall, []byte{0xff})
	case "unknown-binding":
		_ = writeFrame(out, frameCall, callFrame{Seq: 1, Name: "nope", Args: []byte("{}")}.encode())
	case "seq-backwards":
		_ = writeFrame(out, frameCall, callFrame{Seq: 2, Name: "f", Args: []byte("{}")}.encode())
		_ = writeFrame(out, frameCall, callFrame{Seq: 2, Name: "f", Args: []byte("{}")}.encode())
	case "bad-args":
		_ = writeFrame(out, frameCall, callFrame{Seq: 1, Name: "f", Args: []byte("{not json")}.encode())
	case "bad-kind":
		_ = writeFrame(out, frameDone, outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: "weird"}}.encode())
	case "big-value": // a value over MaxResultBytes, which the engine would have refused
		_ = writeFrame(out, frameDone, outcome{Status: outcomeResult, Value: []byte(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"`)}.encode())
	case "oversize": // a header declaring a frame of 1 GiB
		var h [5]byte
		binary.BigEndian.PutUint32(h[:4], 1<<30)
		h[4] = frameCall
		_, _ = out.Write(h[:])
	case "nonblock": // reports whether its pipes are non-blocking (the runtime's poller serves them)
		v := "false"
		if workerFdsNonblocking() {
			v = "true"
		}
		_ = writeFrame(out, frameDone, outcome{Status: outcomeResult, Value: []byte(v)}.encode())
	case "pingpong": // 1,000 sequential calls with no engine (the floor of the protocol and pipes)
		runtime.GOMAXPROCS(1) // as the real worker
		fromParent := bufio.NewReaderSize(in, 64<<10)
		sum := 0
		for i := range 1000 {
			_ = writeFrame(out, frameCall, callFrame{Seq: uint64(i + 1), Name: "echo", Args: fmt.Appendf(nil, `{"n":%d}`, i)}.encode())
			if _, _, err := readFrame(fromParent, workerFrameLimit); err != nil {
				return true
			}
			sum += i
		}
		_ = writeFrame(out, frameDone, outcome{Status: outcomeResult, Value: []byte(strconv.Itoa(sum))}.encode())
	case "settle-wake": // settles, then reports the type of the next frame the parent sends
		var e enc
		e.uint(causeNone)
		_ = writeFrame(out, frameSettled, e.b)
		t, _, err := readFrame(in, workerFrameLimit)
		if err != nil {
			return true
		}
		_ = writeFrame(out, frameDone, outcome{Status: outcomeResult, Value: []byte(strconv.Quote(string(t)))}.encode())
	case "exit":
		os.Exit(7)
	case "panic":
		panic("the worker blew up")
	case "hang": // never answers, ignores cancellation
		select {}
	case "spin": // burns CPU in Go, where no engine interrupt reaches
		for n := 0; ; n++ {
			spinSink = n
		}
	case "spew": // endless output on stderr, then hangs
		b := make([]byte, 1<<16)
		for i := range b {
			b[i] = 'x'
		}
		for {
			_, _ = os.Stderr.Write(b)
		}
	case "eat": // grows its resident memory without bound, outside any engine
		for {
			b := make([]byte, 8<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			eaten = append(eaten, b)
			time.Sleep(time.Millisecond)
		}
	}
	select {}
}
