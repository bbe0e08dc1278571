//go:build !unix

package isolated

// reportGCPercent is a no-op here: workers need unix (see isolationSupported).
func reportGCPercent(string) {}
