package isolated

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// The wire protocol between an [Runtime] parent and its worker process.
//
// Two pipes carry frames: a 4-byte big-endian body length, then the body, whose first byte is the
// frame type. Fields are unsigned varints and byte strings (a varint length, then the bytes).
// Every reader bounds the body length by the frame type before allocating, and a frame that does
// not decode exactly (short, trailing bytes, unknown type) is a protocol break.

// protocolVersion is the worker protocol's version; the parent and worker must agree.
const protocolVersion = 1

// Frame types, worker to parent.
const (
	frameHello   byte = 'H' // version, pid: the worker is ready for its run
	frameCall    byte = 'C' // seq, name, args: a binding call, in submission order
	frameSettled byte = 'S' // the run settled: in-flight calls are cancelled
	frameDone    byte = 'D' // the run's outcome (see outcome)
)

// Frame types, parent to worker.
const (
	frameRun    byte = 'R' // the program (see runRequest)
	frameAnswer byte = 'A' // seq, a binding call's result or error
	frameCancel byte = 'X' // cause: the run's context is done
	frameWake   byte = 'W' // nothing: the answer to frameSettled, which wakes a worker goroutine reading for its answer
)

// errProtocol is wrapped by every decoding error.
var errProtocol = errors.New("coderuntime: worker protocol error")

// maxFrameHeader is the length prefix plus the type byte.
const frameHeader = 5

// writeFrame writes one frame of type t with body b (b excludes the type byte).
func writeFrame(w io.Writer, t byte, b []byte) error {
	if len(b)+1 > math.MaxUint32 {
		return fmt.Errorf("%w: frame of %d bytes", errProtocol, len(b))
	}
	buf := make([]byte, frameHeader, frameHeader+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)+1))
	buf[4] = t
	_, err := w.Write(append(buf, b...))
	return err
}

// errFrameTooLarge is returned by readFrame when a frame's declared length exceeds its limit.
var errFrameTooLarge = errors.New("coderuntime: worker message too large")

// readFrame reads one frame. limit returns the largest body accepted for a frame type, or a
// negative number for a type the reader does not accept.
func readFrame(r io.Reader, limit func(t byte) int) (t byte, body []byte, err error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[:4])
	t = h[4]
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: empty frame", errProtocol)
	}
	max := limit(t)
	if max < 0 {
		return 0, nil, fmt.Errorf("%w: unexpected frame type %q", errProtocol, t)
	}
	if uint64(n-1) > uint64(max) {
		return t, nil, fmt.Errorf("%w: a frame of type %q declares %d bytes, over the limit of %d", errFrameTooLarge, t, n-1, max)
	}
	body = make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		if safeerr.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, body, nil
}

// enc builds a frame body.
type enc struct{ b []byte }

func (e *enc) uint(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) bytes(v []byte)  { e.uint(uint64(len(v))); e.b = append(e.b, v...) }
func (e *enc) string(v string) { e.uint(uint64(len(v))); e.b = append(e.b, v...) }

// dec reads a frame body; the first error sticks and later reads return zero values.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errProtocol, what)
	}
}

func (d *dec) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a varint that must be at most max.
func (d *dec) int(max int) int {
	v := d.uint()
	if v > uint64(max) {
		d.fail(fmt.Sprintf("number %d over %d", v, max))
		return 0
	}
	return int(v)
}

func (d *dec) bytes() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("truncated byte string")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) string() string { return string(d.bytes()) }

// end reports the first error, or trailing bytes.
func (d *dec) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	return d.err
}
