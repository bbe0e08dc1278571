package toolotel

import "time"

// SetClock makes ins read time from now (spans' timestamps and every
// duration).
func SetClock(ins *Instrumentation, now func() time.Time) { ins.now = now }
