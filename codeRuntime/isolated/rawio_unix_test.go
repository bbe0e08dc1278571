//go:build unix

package isolated

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
)

// rawPipe is a non-blocking pipe read and written through rawFile.
func rawPipe(t testing.TB) (*rawFile, *rawFile) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	// Non-blocking before os.NewFile, as the worker does with its inherited descriptors.
	setNonblock(fds[0])
	setNonblock(fds[1])
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return &rawFile{f: r, fd: uintptr(fds[0])}, &rawFile{f: w, fd: uintptr(fds[1])}
}

// checkRawRoundTrip writes data through a rawFile in chunks of the given size while another
// goroutine reads it all back through a rawFile: the bytes arrive complete and in order, whether
// the raw calls take them, would block (an empty pipe, or a full one: the poller waits) or the
// writer closes (end of file).
func checkRawRoundTrip(t testing.TB, data []byte, chunk int) {
	r, w := rawPipe(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	for rest := data; len(rest) > 0; {
		n := min(chunk, len(rest))
		m, err := w.Write(rest[:n])
		if err != nil || m != n {
			t.Fatalf("write: %d of %d, %v", m, n, err)
		}
		rest = rest[n:]
	}
	w.f.Close()
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("read %d bytes, wrote %d (equal prefix: %v)", len(b), len(data), bytes.HasPrefix(data, b))
	}
}

// TestRawFileRoundTrip: small frames, and writes larger than a pipe holds (which the raw write
// takes in part and the os.File finishes once the reader made room).
func TestRawFileRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, many pipe buffers
	for _, c := range []struct {
		data  []byte
		chunk int
	}{{[]byte("x"), 1}, {big[:5000], 7}, {big, 1 << 20}, {big, 3000}} {
		checkRawRoundTrip(t, c.data, c.chunk)
	}
}

// TestRawFileReadWaits: a read of an empty pipe waits (on the poller) for the data instead of
// returning empty.
func TestRawFileReadWaits(t *testing.T) {
	r, w := rawPipe(t)
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, err := r.Read(b)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b[:n])
	}()
	if _, err := w.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "late" {
		t.Fatalf("read %q", s)
	}
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
}

// FuzzRawFile: any bytes, in any chunk size, cross a pipe through rawFile intact.
func FuzzRawFile(f *testing.F) {
	f.Add([]byte("hello"), uint16(1))
	f.Add(bytes.Repeat([]byte{0, 1, 2}, 40000), uint16(65535))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		if len(data) == 0 {
			return
		}
		checkRawRoundTrip(t, data, int(chunk)+1)
	})
}
