package timeoutpolicy_test

import (
	"math"
	"strings"
	"testing"
	"time"

	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
)

// FuzzConfigValidate: Validate accepts a Config exactly when neither
// duration is negative, and a rejection names each negative field.
func FuzzConfigValidate(f *testing.F) {
	for _, tc := range [][2]int64{
		{0, 0}, {1, 1}, {-1, 0}, {0, -1}, {-1, -1},
		{int64(2 * time.Minute), int64(100 * time.Millisecond)},
		{math.MinInt64, math.MaxInt64}, {math.MaxInt64, math.MinInt64},
	} {
		f.Add(tc[0], tc[1])
	}
	f.Fuzz(func(t *testing.T, def, grace int64) {
		c := timeoutpolicy.Config{Default: time.Duration(def), Grace: time.Duration(grace)}
		err := c.Validate()
		if want := def >= 0 && grace >= 0; want != (err == nil) {
			t.Fatalf("Validate(%+v) = %v; want accepted: %v", c, err, want)
		}
		if err == nil {
			return
		}
		if got := strings.Contains(err.Error(), "negative Default"); got != (def < 0) {
			t.Fatalf("Validate(%+v) = %q: names Default: %v, want %v", c, err, got, def < 0)
		}
		if got := strings.Contains(err.Error(), "negative Grace"); got != (grace < 0) {
			t.Fatalf("Validate(%+v) = %q: names Grace: %v, want %v", c, err, got, grace < 0)
		}
	})
}
