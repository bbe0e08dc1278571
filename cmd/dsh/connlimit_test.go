package main

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// pipeListener is a listener whose connections are the server ends of
// net.Pipe pairs handed to it; accepts counts the connections taken.
type pipeListener struct {
	conns    chan net.Conn
	closed   chan struct{}
	once     sync.Once
	accepted atomic.Int32
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.accepted.Add(1)
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// With the connection limit reached, a further connection is not taken
// (it waits in the backlog, as documented) until a held one closes, and
// is then served.
func TestHTTP_ConnectionLimitHoldsFurtherConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("served")) })}
		served := make(chan error, 1)
		go func() { served <- hs.Serve(newLimitListener(pl, 2)) }()

		var clients []net.Conn
		for i := range 3 {
			c, s := net.Pipe()
			clients = append(clients, c)
			if i < 2 {
				pl.conns <- s // taken: within the limit
				continue
			}
			go func() {
				select {
				case pl.conns <- s:
				case <-pl.closed:
					s.Close()
				}
			}()
		}
		synctest.Wait()
		if n := pl.accepted.Load(); n != 2 {
			t.Fatalf("%d connections taken with a limit of 2", n)
		}
		clients[0].Close() // a held connection ends: the waiting one is taken
		synctest.Wait()
		if n := pl.accepted.Load(); n != 3 {
			t.Fatalf("%d connections taken after one closed, want 3", n)
		}
		// The connection taken last is served, and so is the one held.
		for _, c := range clients[1:] {
			go func() {
				_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			}()
		}
		got := make(chan string, 2)
		for _, c := range clients[1:] {
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err == nil {
					resp.Body.Close()
					got <- resp.Status
				}
			}()
		}
		synctest.Wait()
		if len(got) != 2 {
			t.Errorf("%d of the 2 open connections answered", len(got))
		}
		hs.Close()
		for _, c := range clients {
			c.Close()
		}
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	})
}
