//go:build linux

package cpu

import (
	"runtime"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"golang.org/x/sys/unix"
)

func threadCPU() int64 { return clockNanos(unix.CLOCK_THREAD_CPUTIME_ID) }

func processCPU() int64 { return clockNanos(unix.CLOCK_PROCESS_CPUTIME_ID) }

func clockNanos(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// TestOneThreadMatMulStaysOnCaller checks a one-worker backend keeps its matrix products on
// the calling thread: the whole process's CPU time then grows no faster than the thread's.
// When products used every core, the process's time grew about twice as fast on two cores.
func TestOneThreadMatMulStaysOnCaller(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two cores to tell one thread from several")
	}
	be := NewWithThreads(1)
	defer be.Close()
	const M, N, K = 256, 3072, 768
	fill := func(n int, v float32) *tensor.Tensor {
		x := make([]float32, n)
		for i := range x {
			x[i] = v
		}
		return mk(t, be, x, n)
	}
	a, bm, out := fill(M*K, 0.5), fill(N*K, 0.25), fill(M*N, 0)
	p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	be.MatMul(out, a, bm, nil, p)
	t0, p0 := threadCPU(), processCPU()
	for range 10 {
		be.MatMul(out, a, bm, nil, p)
	}
	thread, process := threadCPU()-t0, processCPU()-p0
	// Headroom for the runtime's own background work (GC, scavenger) during the loop.
	if float64(process) > 1.3*float64(thread)+5e6 {
		t.Errorf("a one-worker backend's products used %.1f ms of CPU time on the calling thread and %.1f ms in the process: they ran on other threads too",
			float64(thread)/1e6, float64(process)/1e6)
	}
	if got, want := Float32s(out)[0], float32(K)*0.5*0.25; got != want {
		t.Errorf("out[0] = %v, want %v", got, want)
	}
}

// BenchmarkOpsCPUTime reports every op's CPU time on a one-worker backend at GPT-2 124M shapes
// (B=4, T=64), measured with the thread's CPU clock, which other processes on a shared machine
// barely disturb. A one-worker backend runs its matrix products on the calling thread too.
func BenchmarkOpsCPUTime(b *testing.B) {
	o := newOpBench(b, NewWithThreads(1), bB, bT, bC, bNH, bV, bVp)
	defer o.b.Close()
	for _, op := range o.ops {
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
