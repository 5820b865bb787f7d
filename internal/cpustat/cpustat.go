// Package cpustat reports the process CPU time an operation costs in a
// benchmark: on a shared machine latencies and rates follow the
// neighbours' load, the CPU an operation costs much less.
package cpustat

import (
	"testing"
	"time"
)

// Meter is the process CPU time used so far when it was started.
type Meter struct {
	start time.Duration
	ok    bool
}

// Start reads the process CPU time used so far (user + system: the embedded
// nats-server, the node and the benchmark's clients alike).
func Start() Meter {
	d, ok := processCPU()
	return Meter{start: d, ok: ok}
}

// Report reports the CPU time per op since Start as "cpu-µs/op" (nothing
// where the process CPU time is not measured).
func (m Meter) Report(b *testing.B, ops int) {
	if now, ok := processCPU(); ok && m.ok && ops > 0 {
		b.ReportMetric(float64((now-m.start).Microseconds())/float64(ops), "cpu-µs/op")
	}
}
