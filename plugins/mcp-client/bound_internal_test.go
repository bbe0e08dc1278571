package mcpclient

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestBoundedBodyCountsSSEEventsApart(t *testing.T) {
	ev := "data: " + strings.Repeat("x", 90) + "\r\n\r\n"
	b := &boundedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat(ev, 1000))), limit: 100, sse: true}
	if n, err := io.Copy(io.Discard, b); err != nil || n != int64(len(ev)*1000) {
		t.Errorf("events under the limit: %d %v", n, err)
	}
	b = &boundedBody{rc: io.NopCloser(strings.NewReader("data: " + strings.Repeat("x", 200) + "\n\n")), limit: 100, sse: true}
	var tl errMessageTooLarge
	if _, err := io.Copy(io.Discard, b); !errors.As(err, &tl) {
		t.Errorf("an event over the limit: %v", err)
	}
	b = &boundedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("{}\n\n", 100))), limit: 100}
	if _, err := io.Copy(io.Discard, b); !errors.As(err, &tl) {
		t.Errorf("a JSON body over the limit (blank lines do not reset it): %v", err)
	}
}
