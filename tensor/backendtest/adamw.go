package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// RunAdamW compares one AdamW step with the reference's, without clipping, with clipping
// that scales the gradient by about 0.3 (which the bound cannot hide), and with clipping that
// leaves it unscaled, within 1e-6 relative to the magnitude of each value's terms (a device's
// division and square root may differ from the host's by an ulp or two). It runs on the
// backend newBackend opens and on each variant, with windows of 1000 elements.
func RunAdamW(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	backends, ref, closeAll := underTest(t, newBackend, opts)
	defer closeAll()
	for _, be := range backends {
		for _, n := range []int{1, 1000, 4099} {
			for _, clip := range []string{"none", "active", "inactive"} {
				adamWStep(t, fmt.Sprintf("n=%d clip=%s%s", n, clip, be.suffix), be.b, ref, n, clip, opts.Bitwise)
			}
		}
	}
}

// adamWStep runs one step of n parameters on b and on ref and compares params, m and v.
func adamWStep(t *testing.T, what string, b, ref tensor.Backend, n int, clip string, bitwise bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), uint64(len(clip))))
	hp, hg, hm := normals(r, n), normals(r, n), normals(r, n)
	hv := make([]float32, n)
	for i := range hv {
		hv[i] = float32(r.Float64())
	}
	p := tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 7}
	var sumsq float32
	switch clip {
	case "active":
		for _, g := range hg {
			sumsq += g * g
		}
		p.MaxNorm = 0.3 * float32(math.Sqrt(float64(sumsq)))
	case "inactive":
		sumsq, p.MaxNorm = 4, 10
	}
	run := func(be tensor.Backend) [3][]float32 {
		tp, tg, tm, tv := OnBackend(t, be, hp, 1), OnBackend(t, be, hg, 2), OnBackend(t, be, hm, 3), OnBackend(t, be, hv, 4)
		q := p
		if clip != "none" {
			q.GradSumSq = OnBackend(t, be, []float32{sumsq}, 5)
		}
		be.AdamW(tp, tg, tm, tv, q)
		out := [3][]float32{download(t, be, tp), download(t, be, tm), download(t, be, tv)}
		freeAll(be, tp, tg, tm, tv, q.GradSumSq)
		return out
	}
	got, want := run(b), run(ref)
	for j, x := range []struct {
		name  string
		old   []float32
		scale float64
	}{{"params", hp, float64(p.LR)}, {"m", hm, 0}, {"v", hv, 0}} {
		for i := range n {
			g := float64(hg[i])
			tol := 1e-6 * (math.Abs(float64(want[j][i])) + math.Abs(float64(x.old[i])) + x.scale + math.Abs(g) + g*g)
			checkValue(t, what+": "+x.name, i, got[j][i], want[j][i], tol, bitwise)
		}
	}
}
