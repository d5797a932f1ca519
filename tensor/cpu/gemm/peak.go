package gemm

import (
	"runtime"
	"sync"
	"time"
)

// PeakGFLOPS measures this machine's single-precision FMA throughput in GFLOP/s on threads
// goroutines at once (threads <= 0 means Threads()), with a register-only loop of
// independent FMAs at the widest vector width the CPU supports (the scalar Go loop in
// builds without assembly). It takes about 0.1 s; comparing a product's GFLOP/s with it in
// the same process gives the fraction of peak despite clock and load changes.
func PeakGFLOPS(threads int) float64 {
	return kernels[0].peakGFLOPS(threads)
}

// peakGFLOPS measures the FMA throughput at the kernel's vector width.
func (kern *microKernel) peakGFLOPS(threads int) float64 {
	if threads <= 0 {
		threads = Threads()
	}
	peakLoop := kern.peak
	// Calibrate the iteration count to about 5 ms on one thread, then keep the best of ten
	// runs: on a shared machine some runs lose time slices to other processes.
	n := 1 << 14
	for {
		t := time.Now()
		peakLoop(n)
		if d := time.Since(t); d > 2*time.Millisecond {
			n = int(float64(n) * float64(5*time.Millisecond) / float64(d))
			break
		}
		n *= 4
	}
	best := 0.0
	for rep := 0; rep < 10; rep++ {
		var wg sync.WaitGroup
		start := make(chan struct{})
		flops := make([]float64, threads)
		for i := 0; i < threads; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				<-start
				flops[i] = peakLoop(n) * float64(n)
			}()
		}
		t := time.Now()
		close(start)
		wg.Wait()
		d := time.Since(t).Seconds()
		total := 0.0
		for _, f := range flops {
			total += f
		}
		best = max(best, total/d/1e9)
	}
	return best
}
