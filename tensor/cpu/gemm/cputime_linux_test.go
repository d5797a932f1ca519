package gemm

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime returns the CPU time this process has used, or 0 where unknown. Benchmarks divide
// work by it so that time slices taken by other processes on a shared machine do not count.
func cpuTime() time.Duration { return clock(unix.CLOCK_PROCESS_CPUTIME_ID) }

// threadCPUTime is cpuTime for the calling thread.
func threadCPUTime() time.Duration { return clock(unix.CLOCK_THREAD_CPUTIME_ID) }

func clock(id int32) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
