//go:build unix

package gemm

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process has used, or 0 where unknown. Benchmarks divide
// work by it so that time slices taken by other processes on a shared machine do not count.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
