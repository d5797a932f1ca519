//go:build linux

package cpu

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// BenchmarkOpsCPUTime reports every op's CPU time on a one-worker backend at GPT-2 124M shapes
// (B=4, T=64), measured with the thread's CPU clock, which other processes on a shared machine
// barely disturb. MatMul is left out: package gemm runs on its own threads.
func BenchmarkOpsCPUTime(b *testing.B) {
	o := newOpBench(b, NewWithThreads(1), bB, bT, bC, bNH, bV, bVp)
	defer o.b.Close()
	for _, op := range o.ops {
		if op.name == "MatMul" {
			continue
		}
		b.Run(op.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			op.run()
			t0 := threadCPU()
			for b.Loop() {
				op.run()
			}
			b.ReportMetric(float64(threadCPU()-t0)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}
