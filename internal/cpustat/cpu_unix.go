//go:build unix

package cpustat

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process used so far (user + system: the
// embedded nats-server, the node and the benchmark's clients alike).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
