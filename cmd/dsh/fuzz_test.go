package main

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/redact"
)

// FuzzNetworkFace checks the invariants of the HTTP face's parsers: an
// address called loopback is one; an accepted Origin is listed or
// loopback; an accepted Host is an IP literal or a listed name; a masked
// URL shows no query value or user info.
func FuzzNetworkFace(f *testing.F) {
	for _, s := range []string{":8080", "0.0.0.0:1", "[::1]:2", "localhost:3", "http://localhost:3000", "https://app.example", "null",
		"http://127.0.0.1.evil:1", "http://[::1]:1", "evil.example:80", "10.0.0.1", "localhost.", "[::ffff:127.0.0.1]:1"} {
		f.Add(s, "secret-value-1234")
	}
	allowed := []string{"https://app.example"}
	g := newHostGuard([]string{"dsh.example"})
	f.Fuzz(func(t *testing.T, s, secret string) {
		if addr, loopback, _, err := listenAddr(s); err == nil && loopback {
			host := addr[:strings.LastIndexByte(addr, ':')]
			ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
			if err != nil || !ip.IsLoopback() {
				t.Fatalf("listenAddr(%q) = %q called loopback", s, addr)
			}
		}
		if s != "" && originOK(s, allowed) && strings.ToLower(s) != allowed[0] {
			u, err := url.Parse(strings.ToLower(s))
			if err != nil {
				t.Fatalf("origin %q accepted unparsed", s)
			}
			h := u.Hostname()
			ip, err := netip.ParseAddr(h)
			if h != "localhost" && (err != nil || !ip.IsLoopback()) {
				t.Fatalf("origin %q accepted", s)
			}
		}
		if g.ok(s) {
			h := strings.ToLower(s)
			if hh, _, err := net.SplitHostPort(h); err == nil {
				h = hh
			}
			h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
			_, ipErr := netip.ParseAddr(h)
			if ipErr != nil && h != "localhost" && h != "dsh.example" && !g.allowed[h] {
				t.Fatalf("Host %q accepted", s)
			}
		}
		if len(secret) >= 8 && !strings.Contains("https://***@example.com/p?api_key=", secret) {
			raw := "https://" + url.PathEscape(secret) + "@example.com/p?api_key=" + url.QueryEscape(secret)
			m := redact.URL(raw)
			if strings.Contains(m, secret) || strings.Contains(m, url.QueryEscape(secret)) || strings.Contains(m, url.PathEscape(secret)) {
				t.Fatalf("redact.URL(%q) = %q shows the secret", raw, m)
			}
		}
	})
}
