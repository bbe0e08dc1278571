package mcpclient

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// boundTransport bounds what a streamable HTTP server can make the client
// read in one message: a JSON response body, or one event of an SSE
// stream, longer than limit bytes fails the read (the go-sdk client reads
// a JSON body whole, and an SSE event without a cap).
type boundTransport struct {
	limit int64
	base  http.RoundTripper
	// exceeded, if set, is called when a message passes the limit (the
	// go-sdk reports the failed request without the reason).
	exceeded func(error)
}

func (b boundTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &boundedBody{rc: resp.Body, limit: b.limit, sse: mt == "text/event-stream", exceeded: b.exceeded}
	return resp, nil
}

// errMessageTooLarge fails a read past the limit.
type errMessageTooLarge struct{ limit int64 }

func (e errMessageTooLarge) Error() string {
	return fmt.Sprintf("the server sent a message larger than %d bytes (maxMessageBytes)", e.limit)
}

// boundedBody counts the bytes of the current message: the whole body,
// or, for an SSE stream, the bytes since the last blank line (the end of
// an event).
type boundedBody struct {
	rc    io.ReadCloser
	limit int64
	sse   bool
	n     int64 // bytes of the current message
	nl    bool  // the previous byte (CR ignored) ended a line
	err   error

	exceeded func(error)
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	for i := 0; i < n; i++ {
		c := p[i]
		if b.sse {
			switch {
			case c == '\r':
				continue
			case c == '\n' && b.nl:
				b.n = 0 // a blank line: the event ended
				continue
			case c == '\n':
				b.nl = true
			default:
				b.nl = false
			}
		}
		b.n++
		if b.n > b.limit {
			b.err = errMessageTooLarge{b.limit}
			if b.exceeded != nil {
				b.exceeded(b.err)
			}
			return i, b.err
		}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// sseTransport connects a legacy SSE transport under a context that
// outlives the connection attempt: the go-sdk's SSE client ties its event
// stream to the context Connect gets, which ends with the attempt. The
// stream is bounded by the attempt's context while connecting, then by
// life (the plugin's context) until the connection is closed.
type sseTransport struct {
	inner mcp.Transport
	life  context.Context
}

func (t sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	sctx, cancel := context.WithCancel(t.life)
	stop := context.AfterFunc(ctx, cancel)
	c, err := t.inner.Connect(sctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			_ = c.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	return &cancelConn{Connection: c, cancel: cancel}, nil
}

// cancelConn ends its stream's context when closed.
type cancelConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *cancelConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
