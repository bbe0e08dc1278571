package codemode

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, on every machine
)

// checkAppendTime fails unless appendTime writes t exactly as encoding/json does (or refuses it
// where encoding/json errs or writes otherwise: a year outside 0–9999).
func checkAppendTime(t *testing.T, at time.Time) {
	t.Helper()
	got, ok := appendTime([]byte("x"), at)
	want, err := json.Marshal(at)
	if !ok {
		if err == nil && at.Year() >= 0 && at.Year() <= 9999 {
			t.Fatalf("%v: refused, encoding/json writes %s", at, want)
		}
		return
	}
	if err != nil || string(got) != "x"+string(want) {
		t.Fatalf("%v: appendTime wrote %s, encoding/json %s (%v)", at, got[1:], want, err)
	}
}

// TestAppendTimeMatchesEncodingJSON pins appendTime, which keeps the text of the last second it
// wrote, to encoding/json's text of every instant: across seconds, fractions, locations (fixed
// offsets in minutes and in seconds, and a zone's daylight-saving transitions), in turn and
// alternating, and to its refusal of a year it does not write.
func TestAppendTimeMatchesEncodingJSON(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	lhi, err := time.LoadLocation("Australia/Lord_Howe") // a 30-minute daylight-saving shift
	if err != nil {
		t.Fatal(err)
	}
	locs := []*time.Location{time.UTC, time.Local, ny, lhi, time.FixedZone("a", 5*3600+1800),
		time.FixedZone("b", -1800), time.FixedZone("c", 75), time.FixedZone("d", -(14*3600 + 59)), time.FixedZone("e", 0)}
	rng := rand.New(rand.NewPCG(1, 2))
	nanos := []int{0, 1, 10, 100, 999_999_999, 500_000_000, 123_456_789, 120_000_000, 100_000_001}
	// Around New York's and Lord Howe's transitions of 2026, second by second.
	for _, tr := range []time.Time{
		time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC),
		time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC), time.Date(2026, 10, 3, 15, 30, 0, 0, time.UTC),
	} {
		for d := -3; d <= 3; d++ {
			for _, ns := range nanos {
				for _, loc := range locs {
					checkAppendTime(t, tr.Add(time.Duration(d)*time.Second+time.Duration(ns)).In(loc))
				}
			}
		}
	}
	for range 20000 {
		sec := rng.Int64N(253402300800+62135596800) - 62135596800 // years 1–9999
		ns := nanos[rng.IntN(len(nanos))]
		if rng.IntN(2) == 0 {
			ns = rng.IntN(1_000_000_000)
		}
		at := time.Unix(sec, int64(ns)).In(locs[rng.IntN(len(locs))])
		checkAppendTime(t, at)
		checkAppendTime(t, at) // the same second again: its kept text
		checkAppendTime(t, at.Add(time.Duration(rng.IntN(1_000_000_000))))
		checkAppendTime(t, at.In(locs[rng.IntN(len(locs))])) // the same second elsewhere
	}
	for _, at := range []time.Time{
		{}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("f", 3600)), // year 10000 there
		time.Date(0, 1, 1, 0, 30, 0, 0, time.UTC).In(time.FixedZone("g", -3600)),     // year -1 there
		time.Now(), time.Now().Round(0),
	} {
		checkAppendTime(t, at)
		checkAppendTime(t, at)
	}
}

// FuzzAppendTime pins appendTime to encoding/json for any instant and fixed offset.
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1796342400), uint32(123456789), int32(0))
	f.Add(int64(-62135596800), uint32(0), int32(-3600))
	f.Add(int64(253402300799), uint32(999999999), int32(3600))
	f.Add(int64(0), uint32(1), int32(75))
	f.Fuzz(func(t *testing.T, sec int64, ns uint32, off int32) {
		at := time.Unix(sec, int64(ns%1_000_000_000)).In(time.FixedZone("z", int(off%(24*3600))))
		checkAppendTime(t, at)
		checkAppendTime(t, at.UTC())
		checkAppendTime(t, at)
	})
}

// TestAppendTimeKeepsItsSecond: appendTime writes an instant of the second it wrote last (in the
// same location) from that second's kept text, without making it again; another second or
// location replaces it.
func TestAppendTimeKeepsItsSecond(t *testing.T) {
	at := time.Date(2026, 12, 4, 15, 28, 26, 5, time.UTC)
	appendTime(nil, at)
	kept := lastSecond.Load()
	for _, ns := range []int{0, 1, 999_999_999} {
		appendTime(nil, at.Add(time.Duration(ns-5)))
		if lastSecond.Load() != kept {
			t.Fatalf("an instant of the same second (+%dns) made its text again", ns-5)
		}
	}
	appendTime(nil, at.Add(time.Second))
	if p := lastSecond.Load(); p == kept || p.sec != at.Unix()+1 {
		t.Fatal("the next second did not replace the kept text")
	}
	appendTime(nil, at.In(time.FixedZone("x", 3600)))
	if p := lastSecond.Load(); p.sec != at.Unix() || p.loc == time.UTC {
		t.Fatal("another location did not replace the kept text")
	}
}

// TestAppendTimeConcurrent: sub-calls write their times concurrently (parallel tools); each gets
// its own instant's text (run it with -race).
func TestAppendTimeConcurrent(t *testing.T) {
	base := time.Date(2026, 12, 4, 15, 28, 26, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				at := base.Add(time.Duration(i%3)*time.Second + time.Duration(g*1000+i))
				if g%2 == 1 {
					at = at.In(time.FixedZone("y", 3600*g))
				}
				got, _ := appendTime(nil, at)
				want, _ := json.Marshal(at)
				if string(got) != string(want) {
					t.Errorf("%v: %s, want %s", at, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
