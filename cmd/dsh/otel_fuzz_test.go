package main

import (
	"strings"
	"testing"
)

// The SDK's text, whatever it is, never shows a header value the
// environment configured, nor the query value of the configured endpoint.
func FuzzOtelRedactor(f *testing.F) {
	f.Add("s3cret-value", "tok3n", `Post "https://c.example/v1/traces?key=tok3n": 401 s3cret-value`)
	f.Add("abc%20def", "q", "abc def abc%20def")
	f.Add("Bearer x1y2", "zz", "header Bearer x1y2, https://u:Bearer x1y2@h/")
	f.Fuzz(func(t *testing.T, header, query, text string) {
		ok := func(v string) bool {
			return len(v) >= 4 && !strings.ContainsAny(v, "*,=&#?%+ \t\r\n") && strings.TrimSpace(v) == v
		}
		if !ok(header) || !ok(query) || len(text) > 4096 {
			t.Skip()
		}
		endpoint := "https://collector.example/v1/traces?key=" + query
		r := newOtelRedactor(func(k string) string {
			switch k {
			case "OTEL_EXPORTER_OTLP_HEADERS":
				return "x-key=" + header
			case "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
				return endpoint
			}
			return ""
		})
		for _, in := range []string{text + header + text, text + endpoint + text, `Post "` + endpoint + `": ` + text} {
			got := r.string(in)
			if strings.Contains(got, header) || strings.Contains(got, query) && !strings.Contains(strings.ReplaceAll(in, endpoint, ""), query) {
				t.Fatalf("%q -> %q shows a secret (header %q, query %q)", in, got, header, query)
			}
		}
	})
}
