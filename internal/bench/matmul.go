package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/internal/timing"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
)

// Each matmul shape is timed for steps batches of calls (matmulBatchTime) and at least
// matmulMinTime (up to matmulMaxCalls calls): on a shared machine a core can be taken away for
// tens of milliseconds at a time, which would otherwise cover every call of a fast shape and
// move its median.
const (
	matmulMinTime  = 500 * time.Millisecond
	matmulMaxCalls = 5000
)

// Matmul times GPT-2's training products at rows rows: forward (x @ Wᵀ) and both backward
// forms, warmup calls each and then steps batches of calls, and reports each shape's median
// GFLOP/s and its fraction of the FMA peak.
func Matmul(be tensor.Backend, cfg gpt2.Config, rows, steps, warmup int) (map[string]any, error) {
	p, th := peak(be)
	var out []map[string]any
	for si, s := range matmulShapes(cfg, rows) {
		times, calls, err := timeMatmul(be, s, steps, warmup)
		if err != nil {
			return nil, err
		}
		mean, median := meanMedian(times)
		g := 2 * float64(s.p.M) * float64(s.p.N) * float64(s.p.K) / median / 1e9
		out = append(out, map[string]any{"shape": s.name, "ms": median * 1e3, "mean_ms": mean * 1e3, "gflops": g, "calls": calls})
		if si%3 == 2 {
			// Measured again through the run, the highest kept: one measurement taken while
			// another process held a core would understate the peak and inflate every fraction.
			if q, _ := peak(be); q > p {
				p = q
			}
		}
	}
	rep := map[string]any{"bench": "matmul", "rows": out, "peak_rss_bytes": sysinfo.PeakRSS()}
	if p > 0 {
		setPeak(rep, be, p, th)
		for _, row := range out {
			row["peak_fraction"] = row["gflops"].(float64) / p
		}
	}
	if cm := coopMatPeak(be); cm > 0 {
		rep["peak_coopmat_gflops"] = cm
		for _, row := range out {
			row["coopmat_peak_fraction"] = row["gflops"].(float64) / cm
		}
	}
	return rep, nil
}

// matmulShape is one product Matmul times.
type matmulShape struct {
	name    string
	p       tensor.MatMulParams
	a, b, o int // element counts
}

// matmulShapes are GPT-2's training products at M rows, three per linear layer: forward
// (x @ Wᵀ), then the gradients of the input and of the weight.
func matmulShapes(cfg gpt2.Config, M int) []matmulShape {
	C, Vp := cfg.Channels, cfg.PaddedVocabSize
	var shapes []matmulShape
	for _, nk := range [][2]int{{3 * C, C}, {C, C}, {4 * C, C}, {C, 4 * C}, {Vp, C}} {
		N, K := nk[0], nk[1]
		shapes = append(shapes,
			matmulShape{fmt.Sprintf("fwd %dx%dx%d (B^T)", M, K, N), tensor.MatMulParams{M: M, N: N, K: K, TransB: true}, M * K, N * K, M * N},
			matmulShape{fmt.Sprintf("dA  %dx%dx%d", M, N, K), tensor.MatMulParams{M: M, N: K, K: N}, M * N, N * K, M * K},
			matmulShape{fmt.Sprintf("dB  %dx%dx%d (A^T)", N, M, K), tensor.MatMulParams{M: N, N: K, K: M, TransA: true}, M * N, M * K, N * K})
	}
	return shapes
}

// matmulBatchTime is the least time of one timed sample. A GPU computes a small product in
// microseconds, less than it takes to submit the product and wait for it, so a sample is a
// batch of calls back to back, as many as last this long, and a call's time is its share.
const matmulBatchTime = 2 * time.Millisecond

// timeMatmul returns a call's time in seconds in each timed batch of s, and the calls timed:
// warmup calls first, then batches of as many calls as last matmulBatchTime, at least steps
// batches and matmulMinTime (up to matmulMaxCalls calls).
func timeMatmul(be tensor.Backend, s matmulShape, steps, warmup int) ([]float64, int, error) {
	var ts [3]*tensor.Tensor
	for i, n := range []int{s.a, s.b, s.o} {
		t, err := tensor.New(be, tensor.Float32, n)
		if err != nil {
			return nil, 0, err
		}
		defer be.Free(t.Storage)
		ts[i] = t
	}
	a, b, o := ts[0], ts[1], ts[2]
	be.Fill(a, 0.5)
	be.Fill(b, 0.25)
	for i := 0; i < warmup; i++ {
		be.MatMul(o, a, b, nil, s.p)
	}
	if err := be.Sync(); err != nil {
		return nil, 0, err
	}
	settle()
	batch := func(n int) (time.Duration, error) {
		return timing.Run(func() error {
			for range n {
				be.MatMul(o, a, b, nil, s.p)
			}
			return nil
		}, be.Sync)
	}
	first := time.Now()
	n, took, err := timing.Grow(matmulBatchTime, batch)
	if err != nil {
		return nil, 0, err
	}
	times, calls := []float64{took.Seconds() / float64(n)}, n
	for len(times) < steps || time.Since(first) < matmulMinTime && calls < matmulMaxCalls {
		took, err := batch(n)
		if err != nil {
			return nil, 0, err
		}
		times, calls = append(times, took.Seconds()/float64(n)), calls+n
	}
	return times, calls, nil
}

// meanMedian returns the mean and the median of xs (which it sorts). The median is what the
// matmul rows report: on a shared machine a call that loses its core to another process
// moves the mean, not the median.
func meanMedian(xs []float64) (mean, median float64) {
	slices.Sort(xs)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	n := len(xs)
	median = xs[n/2]
	if n%2 == 0 {
		median = (xs[n/2-1] + xs[n/2]) / 2
	}
	return mean, median
}
