package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// RunElementwise runs Add, Mul, Scale, Copy, Fill, Axpy, Sum and SumSquares in turn over the
// same 70001-element tensors on the backend newBackend opens and on the reference, and
// compares after each: bitwise for the elementwise ops, within float32 rounding for Axpy (a
// fused multiply-add rounds once) and for the sums (another summation order). Variants run
// the sequence too, with windows of 1000 elements.
func RunElementwise(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	backends, ref, closeAll := underTest(t, newBackend, opts)
	defer closeAll()
	for _, be := range backends {
		elementwise(t, be.suffix, be.b, ref, opts)
	}
}

// elementwiseOps are RunElementwise's ops, each with the tensor it writes and its tolerance
// (0: bitwise; else relative to the magnitude of the terms).
var elementwiseOps = []struct {
	name string
	run  func(b tensor.Backend, x, y, out, s *tensor.Tensor)
	sum  bool // the result is s, not out
	tol  float64
}{
	{"Add", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Add(out, x, y) }, false, 0},
	{"Mul", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Mul(out, x, y) }, false, 0},
	{"Scale", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Scale(out, -0.3) }, false, 0},
	{"Copy", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Copy(out, y) }, false, 0},
	{"Fill", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Fill(out, 0.7) }, false, 0},
	{"Axpy", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Axpy(out, 1.3, x) }, false, 1.2e-7},
	{"Sum", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.Sum(s, out) }, true, 1e-6},
	{"SumSquares", func(b tensor.Backend, x, y, out, s *tensor.Tensor) { b.SumSquares(s, x) }, true, 1e-6},
}

// elementwise runs elementwiseOps on b and on ref, each on tensors of its own; suffix labels
// b's results.
func elementwise(t *testing.T, suffix string, b, ref tensor.Backend, opts Options) {
	t.Helper()
	const n = 70001
	r := rand.New(rand.NewPCG(7, 7))
	a, c := normals(r, n), normals(r, n)
	type pair struct{ b, ref *tensor.Tensor }
	mk := func(data []float32) pair {
		return pair{OnBackend(t, b, data, 0), OnBackend(t, ref, data, 0)}
	}
	x, y, out, s := mk(a), mk(c), mk(make([]float32, n)), mk([]float32{0})
	defer freeAll(b, x.b, y.b, out.b, s.b)
	defer freeAll(ref, x.ref, y.ref, out.ref, s.ref)
	var magnitude float64
	for _, v := range a {
		magnitude += math.Abs(float64(v)) + float64(v)*float64(v)
	}
	for _, op := range elementwiseOps {
		op.run(b, x.b, y.b, out.b, s.b)
		op.run(ref, x.ref, y.ref, out.ref, s.ref)
		res := out
		if op.sum {
			res = s
		}
		got, want := download(t, b, res.b), download(t, ref, res.ref)
		for i := range got {
			if op.tol == 0 || opts.Bitwise {
				checkValue(t, op.name+suffix, i, got[i], want[i], 0, true)
				continue
			}
			scale := math.Abs(float64(want[i])) + 1e-30
			if op.sum {
				scale = magnitude
			}
			if op.name == "Axpy" { // a fused multiply-add rounds once, relative to its terms
				scale += 0.7 + 1.3*math.Abs(float64(a[i]))
			}
			checkValue(t, op.name+suffix, i, got[i], want[i], op.tol*scale, false)
		}
	}
}
