package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// Sizes that cover a single short chunk and several chunks with a ragged tail.
var ewSizes = []int{1, 37, 3*ewChunk + 11, 2*ewChunkCheap + 5}

func TestElementwise(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range ewSizes {
		xa, ya := randn(r, n, 1), randn(r, n, 1)
		x, y := mk(t, b, xa, n), mk(t, b, ya, n)
		out := mk(t, b, make([]float32, n), n)

		b.Fill(out, 2.5)
		for i, v := range Float32s(out) {
			if v != 2.5 {
				t.Fatalf("n=%d Fill[%d] = %v", n, i, v)
			}
		}
		b.Copy(out, x)
		if !bitsEqual(Float32s(out), xa) {
			t.Fatalf("n=%d Copy differs", n)
		}
		ti := mkI(t, b, randTokens(r, n, 1000), n)
		to := mkI(t, b, make([]int32, n), n)
		b.Copy(to, ti)
		for i, v := range Int32s(to) {
			if v != Int32s(ti)[i] {
				t.Fatalf("n=%d int32 Copy[%d] = %d", n, i, v)
			}
		}

		want := make([]float64, n)
		b.Add(out, x, y)
		for i := range want {
			want[i] = float64(xa[i] + ya[i])
		}
		near(t, "Add", Float32s(out), want, 0, 0)
		b.Mul(out, x, y)
		for i := range want {
			want[i] = float64(xa[i] * ya[i])
		}
		near(t, "Mul", Float32s(out), want, 0, 0)
		// Aliased output.
		b.Add(x, x, y)
		for i := range want {
			want[i] = float64(xa[i] + ya[i])
		}
		near(t, "Add aliased", Float32s(x), want, 0, 0)
		copy(Float32s(x), xa)

		b.Copy(out, y)
		b.Axpy(out, -0.75, x)
		for i := range want {
			want[i] = float64(ya[i]) - 0.75*float64(xa[i])
		}
		near(t, "Axpy", Float32s(out), want, 1e-6, 1e-6)
		b.Scale(out, 3)
		for i := range want {
			want[i] *= 3
		}
		near(t, "Scale", Float32s(out), want, 1e-5, 1e-6)

		s := mk(t, b, []float32{0}, 1)
		var sum, sq float64
		for _, v := range xa {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		b.Sum(s, x)
		near(t, "Sum", Float32s(s), []float64{sum}, 1e-6, 1e-6)
		b.SumSquares(s, x)
		near(t, "SumSquares", Float32s(s), []float64{sq}, 1e-6, 1e-6)
	}
}

func geluRef(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func TestGelu(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range ewSizes {
		xa := randn(r, n, 2)
		if n > 4 {
			xa[0], xa[1], xa[2], xa[3] = 0, 12, -12, -40 // saturated tails
		}
		x := mk(t, b, xa, n)
		out := mk(t, b, make([]float32, n), n)
		b.GeluForward(out, x)
		want := make([]float64, n)
		for i, v := range xa {
			want[i] = geluRef(float64(v))
		}
		near(t, "GeluForward", Float32s(out), want, 1e-6, 1e-6)

		da := randn(r, n, 1)
		dinp0 := randn(r, n, 1)
		dinp := mk(t, b, clone(dinp0), n)
		b.GeluBackward(dinp, x, mk(t, b, da, n))
		fd := make([]float64, n)
		for i, v := range xa {
			x := float64(v)
			const h = 1e-6
			fd[i] = (geluRef(x+h) - geluRef(x-h)) / (2 * h) * float64(da[i])
		}
		near(t, "GeluBackward", Float32s(dinp), plus(dinp0, fd), 1e-5, 1e-4)
	}
}

func TestDropout(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	r := rand.New(rand.NewPCG(5, 6))
	n := 2*ewChunk + 7
	xa := randn(r, n, 1)
	x := mk(t, b, xa, n)
	out := mk(t, b, make([]float32, n), n)
	mask := mk(t, b, make([]float32, n), n)
	const p = 0.25
	const seed = 0x1234_5678_9abc
	b.Dropout(out, mask, x, p, seed)
	dropped := 0
	for i := 0; i < n; i++ {
		m := tensor.DropoutScale(seed, uint32(i), p)
		if Float32s(mask)[i] != m || Float32s(out)[i] != xa[i]*m {
			t.Fatalf("Dropout[%d]: mask %v out %v, want mask %v", i, Float32s(mask)[i], Float32s(out)[i], m)
		}
		if m == 0 {
			dropped++
		} else if m != 1/(1-float32(p)) {
			t.Fatalf("mask[%d] = %v", i, m)
		}
	}
	// The fraction dropped is binomial(n, p): allow 5 standard deviations.
	frac := float64(dropped) / float64(n)
	if sd := math.Sqrt(p * (1 - p) / float64(n)); math.Abs(frac-p) > 5*sd {
		t.Errorf("dropped fraction %.4f, want %.2f", frac, p)
	}
}

// adamRef is llm.c's AdamW in float64 with optional gradient scale.
func adamRef(p, g, m, v []float32, lr, b1, b2, eps, wd float64, step int, gs float64) (pp, mm, vv []float64) {
	n := len(p)
	pp, mm, vv = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range p {
		grad := float64(g[i]) * gs
		mm[i] = b1*float64(m[i]) + (1-b1)*grad
		vv[i] = b2*float64(v[i]) + (1-b2)*grad*grad
		mh := mm[i] / (1 - math.Pow(b1, float64(step)))
		vh := vv[i] / (1 - math.Pow(b2, float64(step)))
		pp[i] = float64(p[i]) - lr*(mh/(math.Sqrt(vh)+eps)+wd*float64(p[i]))
	}
	return
}

func TestAdamW(t *testing.T) {
	b := NewWithThreads(3)
	defer b.Close()
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range ewSizes {
		for _, clip := range []bool{false, true} {
			pa, ga := randn(r, n, 1), randn(r, n, 0.1)
			ma, va := randn(r, n, 0.01), randn(r, n, 0.001)
			for i := range va {
				va[i] = float32(math.Abs(float64(va[i])))
			}
			p, g, m, v := mk(t, b, clone(pa), n), mk(t, b, ga, n), mk(t, b, clone(ma), n), mk(t, b, clone(va), n)
			prm := tensor.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 3}
			gs := 1.0
			if clip {
				var sq float64
				for _, x := range ga {
					sq += float64(x) * float64(x)
				}
				prm.GradSumSq = mk(t, b, []float32{float32(sq)}, 1)
				prm.MaxNorm = float32(math.Sqrt(sq) / 4) // forces a scale of about 1/4
				gs = float64(prm.MaxNorm) / (math.Sqrt(sq) + 1e-6)
			}
			b.AdamW(p, g, m, v, prm)
			wp, wm, wv := adamRef(pa, ga, ma, va, 1e-3, 0.9, 0.95, 1e-8, 0.1, 3, gs)
			near(t, "AdamW m", Float32s(m), wm, 1e-7, 1e-5)
			near(t, "AdamW v", Float32s(v), wv, 1e-9, 1e-5)
			near(t, "AdamW params", Float32s(p), wp, 1e-6, 1e-5)
			if !bitsEqual(Float32s(g), ga) {
				t.Error("AdamW changed the gradients")
			}
		}
	}
	// A clip norm above the gradient norm leaves the update unscaled. Moments are non-zero so
	// that the update depends on the gradient's scale.
	pa, ga := []float32{1, -2}, []float32{0.3, 0.4} // norm 0.5
	ma, va := []float32{0.05, -0.02}, []float32{0.01, 0.03}
	p, g := mk(t, b, clone(pa), 2), mk(t, b, ga, 2)
	m, v := mk(t, b, clone(ma), 2), mk(t, b, clone(va), 2)
	b.AdamW(p, g, m, v, tensor.AdamWParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 2,
		GradSumSq: mk(t, b, []float32{0.25}, 1), MaxNorm: 1})
	wp, _, _ := adamRef(pa, ga, ma, va, 0.1, 0.9, 0.999, 1e-8, 0, 2, 1)
	near(t, "AdamW unclipped", Float32s(p), wp, 1e-6, 1e-6)
}

// TestAdamWVectorMatchesPortable checks the vector AdamW against the portable loop bit for bit.
func TestAdamWVectorMatchesPortable(t *testing.T) {
	defer func(v bool) { adamVectorOn = v }(adamVectorOn)
	b := NewWithThreads(2)
	defer b.Close()
	r := rand.New(rand.NewPCG(37, 38))
	n := ewChunk + 13
	pa, ga, ma, va := randn(r, n, 1), randn(r, n, 0.1), randn(r, n, 0.01), randn(r, n, 0.001)
	for i := range va {
		va[i] = float32(math.Abs(float64(va[i])))
	}
	ga[0], ga[1] = 0, 1e-30
	var res [2][3][]float32
	for k, vec := range []bool{true, false} {
		adamVectorOn = vec
		p, m, v := mk(t, b, clone(pa), n), mk(t, b, clone(ma), n), mk(t, b, clone(va), n)
		ss := mk(t, b, []float32{4}, 1)
		b.AdamW(p, mk(t, b, ga, n), m, v, tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8,
			WeightDecay: 0.1, Step: 7, GradSumSq: ss, MaxNorm: 1})
		res[k] = [3][]float32{Float32s(p), Float32s(m), Float32s(v)}
	}
	for i, name := range []string{"params", "m", "v"} {
		if !bitsEqual(res[0][i], res[1][i]) {
			t.Errorf("AdamW %s differs between the vector and portable loops", name)
		}
	}
}
