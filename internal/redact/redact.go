// Package redact hides the secrets a URL may carry before it is shown in
// a log line or an error: user info and query values (API keys are often
// passed as ?api_key=...).
package redact

import (
	"net/url"
	"strings"
)

// URL returns s with its user info replaced by "***" and each query
// value by "***"; a string that does not parse is replaced whole.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("***")
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "***"
		} else {
			for k := range q {
				q[k] = []string{"***"}
			}
			u.RawQuery = strings.ReplaceAll(q.Encode(), "%2A%2A%2A", "***")
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return strings.Replace(u.String(), "%2A%2A%2A@", "***@", 1)
}

// In returns text with every occurrence of the URL raw, and of its query
// and user info, replaced by their redacted forms (for an error message
// that quotes the URL).
func In(text, raw string) string {
	if raw == "" {
		return text
	}
	text = strings.ReplaceAll(text, raw, URL(raw))
	if u, err := url.Parse(raw); err == nil {
		if u.RawQuery != "" {
			text = strings.ReplaceAll(text, u.RawQuery, "***")
		}
		if u.User != nil {
			if s := u.User.String(); s != "" {
				text = strings.ReplaceAll(text, s, "***")
			}
		}
	}
	return text
}
