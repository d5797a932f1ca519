package autograd_test

import (
	"math"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The tape keeps the cutoff for the backward: the gradient of the truncated log-prob and
// entropy matches finite differences, and columns below a row's cutoff get exactly 0.
func TestGradLogSoftmaxGatherCutoff(t *testing.T) {
	be := cpu.New()
	const N, V, Vp = 4, 9, 11
	r := rng.New(8)
	logits := newVar(t, be, r, 0, 1.5, N, Vp)
	tg := []int32{0, 8, 3, 5}
	targets := ints(t, be, tg...)
	x := cpu.Float32s(logits.Value)
	cut := make([]float32, N)
	for i := range cut {
		s := append([]float32(nil), x[i*Vp:i*Vp+V]...)
		sort.Slice(s, func(a, b int) bool { return s[a] > s[b] })
		// Keep the k largest, k chosen where the gap is over twice the finite-difference step (1e-2).
		k := 3
		for s[k-1]-s[k] < 0.05 {
			k++
		}
		cut[i] = (s[k-1] + s[k]) / 2
	}
	cut[3] = float32(math.Inf(-1))
	cutoff, err := tensor.FromSlice(be, cut, N)
	if err != nil {
		t.Fatal(err)
	}
	gradCheck(t, func(tp *autograd.Tape) *autograd.Var {
		both := zeros(be, 2*N)
		autograd.LogSoftmaxGather(tp, both.View(0, N), both.View(N, N), logits, targets, cutoff, N, V, Vp, 0.8)
		return both
	}, []*autograd.Var{logits}, []string{"logits"}, autograd.GradCheckOptions{MaxElements: 100})
	g := cpu.Float32s(logits.Grad)
	excluded := 0
	for i := 0; i < N; i++ {
		for v := 0; v < Vp; v++ {
			if (v >= V || x[i*Vp+v] < cut[i]) && v != int(tg[i]) {
				excluded++
				if g[i*Vp+v] != 0 {
					t.Fatalf("dlogits[%d,%d] = %v below the cutoff %v, want 0", i, v, g[i*Vp+v], cut[i])
				}
			}
		}
	}
	if excluded <= N*(Vp-V) {
		t.Fatalf("no column below a cutoff")
	}
}
