package gemm

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// gpt2Shapes are the matmuls of one GPT-2 124M training step at B=4, T=64 (256 rows): the
// forward products with the (out, in) weight transposed, then dX = dY·W and dW = dYᵀ·X.
var gpt2Shapes = []gpt2Shape{
	{"fwd_qkv", false, true, 256, 2304, 768},
	{"fwd_fc", false, true, 256, 3072, 768},
	{"fwd_fcproj", false, true, 256, 768, 3072},
	{"fwd_attproj", false, true, 256, 768, 768},
	{"fwd_lmhead", false, true, 256, 50304, 768},
	{"dx_qkv", false, false, 256, 768, 2304},
	{"dx_fc", false, false, 256, 768, 3072},
	{"dx_fcproj", false, false, 256, 3072, 768},
	{"dx_lmhead", false, false, 256, 768, 50304},
	{"dw_qkv", true, false, 2304, 768, 256},
	{"dw_fc", true, false, 3072, 768, 256},
	{"dw_fcproj", true, false, 768, 3072, 256},
	{"dw_lmhead", true, false, 50304, 768, 256},
}

// gpt2Shape is one product C(m, n) = op(A)·op(B) over k.
type gpt2Shape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// stored is how A and B are laid out in memory: (ar, ac) and (br, bc), rows by columns.
func (s gpt2Shape) stored() (ar, ac, br, bc int) {
	ar, ac, br, bc = s.m, s.k, s.k, s.n
	if s.transA {
		ar, ac = s.k, s.m
	}
	if s.transB {
		br, bc = s.n, s.k
	}
	return ar, ac, br, bc
}

var (
	peakOnce          sync.Once
	peakAll, peakCore float64
)

// measurePeaks records the FMA peak of all threads (wall clock) and of one core (per CPU
// second, which is what a loaded machine leaves unchanged).
func measurePeaks() {
	peakOnce.Do(func() {
		peakAll = PeakGFLOPS(Threads())
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		peakCore = corePeak(kernels[0], threadCPUTime)
	})
}

// corePeak measures a kernel's FMA peak on the calling (locked) thread by the given clock,
// keeping the best of several runs.
func corePeak(kern *microKernel, clock func() time.Duration) float64 {
	best := 0.0
	for rep := 0; rep < 5; rep++ {
		const n = 1 << 21
		c0 := clock()
		flops := kern.peak(n) * n
		if d := clock() - c0; d > 0 {
			best = max(best, flops/d.Seconds()/1e9)
		}
	}
	return best
}

// benchShapes runs the GPT-2 shapes, reporting GFLOP/s by the wall clock and its fraction of
// the all-thread peak, and GFLOP per CPU second as a fraction of one core's peak: the
// per-core efficiency, unaffected by other processes taking the cores.
func benchShapes(b *testing.B, skipBig bool) {
	measurePeaks()
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range gpt2Shapes {
		if skipBig && s.m*s.n > 1<<22 {
			continue
		}
		b.Run(fmt.Sprintf("%s_%dx%dx%d", s.name, s.m, s.n, s.k), func(b *testing.B) {
			ar, ac, br, bc := s.stored()
			a, bm, c := randSlice(r, ar*ac), randSlice(r, br*bc), make([]float32, s.m*s.n)
			Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
			b.ResetTimer()
			c0 := cpuTime()
			for b.Loop() {
				Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
			}
			cpu := (cpuTime() - c0).Seconds()
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
			gflops := flops / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gflops, "GFLOP/s")
			b.ReportMetric(gflops/peakAll, "of_peak")
			if cpu > 0 && peakCore > 0 {
				b.ReportMetric(flops/cpu/1e9/peakCore, "of_core_peak")
			}
		})
	}
}

func BenchmarkSgemm(b *testing.B) { benchShapes(b, false) }

// BenchmarkSgemmOneThread runs the smaller shapes on one thread.
func BenchmarkSgemmOneThread(b *testing.B) {
	old := int(threads.Load())
	SetThreads(1)
	defer SetThreads(old)
	benchShapes(b, true)
}

// BenchmarkPeak measures the FMA peak of each kernel's vector width on all threads.
func BenchmarkPeak(b *testing.B) {
	for _, kern := range kernels {
		b.Run(kern.name, func(b *testing.B) {
			for b.Loop() {
				b.ReportMetric(kern.peakGFLOPS(Threads()), "GFLOP/s")
			}
		})
	}
}

// BenchmarkKernel runs each micro-kernel alone on cache-resident packed operands: the ceiling
// the blocked product can reach on one core. Both the kernel and its FMA peak are timed by
// the thread's CPU clock where there is one, so other processes sharing the core do not count.
func BenchmarkKernel(b *testing.B) {
	for _, kern := range kernels {
		const kb, calls = 256, 100
		a := make([]float32, kern.mr*kb)
		bp := make([]float32, kern.nr*kb)
		c := make([]float32, kern.mr*kern.nr)
		var walk prefetchWalk
		b.Run(kern.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			clock := threadCPUTime
			if clock() == 0 {
				clock = func() time.Duration { return time.Duration(time.Now().UnixNano()) }
			}
			peak := corePeak(kern, clock)
			c0 := clock()
			for b.Loop() {
				for i := 0; i < calls; i++ {
					kern.fn(kb, &a[0], &bp[0], &c[0], kern.nr, 1, 1, 1, &walk)
				}
			}
			g := 2 * float64(kern.mr*kern.nr*kb) * calls * float64(b.N) / (clock() - c0).Seconds() / 1e9
			b.ReportMetric(g, "GFLOP/s")
			b.ReportMetric(g/peak, "of_core_peak")
		})
	}
}

// BenchmarkSgemmFewRows runs the lm head for a few rows, as in a decoding step: memory-bound,
// so it reports the rate at which the weight is read.
func BenchmarkSgemmFewRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n, k = 50304, 768
	bm := randSlice(r, n*k)
	for _, transB := range []bool{true, false} {
		for _, m := range []int{1, 4, 8, 16, 32} {
			b.Run(fmt.Sprintf("transB=%v/m=%d", transB, m), func(b *testing.B) {
				a, c := randSlice(r, m*k), make([]float32, m*n)
				ldb := k
				if !transB {
					ldb = n
				}
				for b.Loop() {
					Sgemm(false, transB, m, n, k, 1, a, k, bm, ldb, 0, c, n)
				}
				b.ReportMetric(float64(n*k*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weight_GB/s")
			})
		}
	}
}

// BenchmarkDecodeProducts times a decoding step's products of GPT-2 124M (few rows of
// activations against a transposed weight, (n, k)) on the dot-product path and, for
// comparison in the same run, on the packed GotoBLAS path, which transposes B every call.
// MB/s counts the weight's bytes, which a batch-1 step is bound by reading.
func BenchmarkDecodeProducts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []shape{{1, 2304, 768}, {1, 3072, 768}, {1, 768, 3072}, {1, 50304, 768}, {8, 3072, 768}} {
		a, w, c := randSlice(r, s.m*s.k), randSlice(r, s.n*s.k), make([]float32, s.m*s.n)
		for _, path := range []string{"dot", "packed"} {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", s.m, s.n, s.k, path), func(b *testing.B) {
				if active.dot == nil {
					b.Skip("this kernel has no dot-product path")
				}
				if path == "packed" {
					saved := active.dot
					active.dot = nil
					defer func() { active.dot = saved }()
				}
				b.SetBytes(int64(4 * s.n * s.k))
				for b.Loop() {
					Sgemm(false, true, s.m, s.n, s.k, 1, a, s.k, w, s.k, 0, c, s.n)
				}
			})
		}
	}
}

// BenchmarkSgemmCold runs GPT-2 shapes with operands that come from memory rather than cache,
// as in a training step, where the other products and passes evict them between uses: each
// iteration takes the next of enough copies of A, B and C that they cannot stay in L3 ("cold";
// "hot" repeats one set, as BenchmarkSgemm does), on huge pages or on base pages (a tensor
// whose memory was used before is not on huge pages, whatever it asks for). of_core_peak is
// GFLOP per CPU second as a fraction of one core's FMA peak.
func BenchmarkSgemmCold(b *testing.B) {
	measurePeaks()
	r := rand.New(rand.NewPCG(1, 3))
	const rotate = 256 << 20 // bytes of each operand's copies, well over L3
	for _, s := range gpt2Shapes {
		ar, ac, br, bc := s.stored()
		for _, pages := range []string{"huge", "base"} {
			for _, cold := range []bool{false, true} {
				name := fmt.Sprintf("%s_%dx%dx%d/%s/hot", s.name, s.m, s.n, s.k, pages)
				if cold {
					name = name[:len(name)-3] + "cold"
				}
				b.Run(name, func(b *testing.B) {
					var unmap []func()
					defer func() {
						for _, f := range unmap {
							f()
						}
					}()
					// Every copy is written here, so that no iteration pays for faulting pages in.
					copies := func(n int) [][]float32 {
						cs := make([][]float32, 1)
						if cold {
							cs = make([][]float32, max(2, rotate/(4*n)))
						}
						for i := range cs {
							x, f := mapFloats(n, pages == "huge")
							for j := range x {
								x[j] = float32(r.Float64()*2 - 1)
							}
							cs[i] = x
							unmap = append(unmap, f)
						}
						return cs
					}
					as, bs, cs := copies(ar*ac), copies(br*bc), copies(s.m*s.n)
					b.ResetTimer()
					c0 := cpuTime()
					it := 0
					for b.Loop() {
						a, bm, c := as[it%len(as)], bs[it%len(bs)], cs[it%len(cs)]
						Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
						it++
					}
					cpu := (cpuTime() - c0).Seconds()
					flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
					if cpu > 0 && peakCore > 0 {
						b.ReportMetric(flops/cpu/1e9/peakCore, "of_core_peak")
					}
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9/peakAll, "of_peak")
				})
			}
		}
	}
}
