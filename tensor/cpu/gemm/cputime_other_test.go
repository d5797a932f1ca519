//go:build !linux

package gemm

import "time"

func cpuTime() time.Duration       { return 0 }
func threadCPUTime() time.Duration { return 0 }
