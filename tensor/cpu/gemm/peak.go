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
//
// What the peak should be on paper, per core in single precision, is FMA pipes x lanes x 2
// flops a cycle. On amd64 the loop runs AVX-512 or AVX2 FMAs. On arm64 it runs NEON FMLA on
// 4-lane (128-bit) vectors, 24 independent chains so four pipes of four-cycle latency stay
// busy:
//
//	Apple M1-M4 P-cores          4 x 128-bit FMA pipes            32 flops/cycle
//	Neoverse V1 (Graviton3)      2 x 256-bit SVE = 4 x 128 NEON   32 flops/cycle
//	Neoverse V2 (Graviton4)      4 x 128-bit                      32 flops/cycle
//	Neoverse N2, N1 (Graviton2)  2 x 128-bit                      16 flops/cycle
//
// so, for example, an M1 P-core at 3.2 GHz peaks near 102 GFLOP/s. A measured peak well
// below pipes x lanes x 2 x clock x threads means threads shared cores or ran on efficiency
// cores. The NEON micro-kernel issues 24 FMLAs per 5 vector registers loaded, so in L1 it
// is bound by the FMA pipes and can approach this peak; a training step's fraction is lower
// (0.60 on amd64, where packing and the non-GEMM operations take the rest), and lower still
// on arm64 while the exponential, GELU, softmax, the norms and AdamW run the portable Go
// kernels. Emulated arm64 (qemu) says nothing about speed.
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
