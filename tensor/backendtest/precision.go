package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// RunProductPrecision checks a tensor.ProductRounder in bf16 and fp16: a product of one term
// by 1 gives each operand's rounding bit for bit (tensor.RoundBfloat16, tensor.RoundFloat16:
// normals, ties, binary16's subnormals and overflow), and every MatMulCases product is the
// reference's float32 product of the rounded operands within CheckMatMul's tolerance, while at
// least one is farther than that from the product of the unrounded ones, which a backend that
// forgot to round would give. The backend is left in fp32.
func RunProductPrecision(t *testing.T, newBackend func(t *testing.T) tensor.Backend) {
	b := newBackend(t)
	defer closeBackend(t, b)
	ref := newReference()
	defer closeBackend(t, ref)
	pr, ok := b.(tensor.ProductRounder)
	if !ok {
		t.Fatalf("%s does not round its products' operands", b.Name())
	}
	defer pr.SetProductPrecision(tensor.FP32)
	for _, p := range []tensor.Precision{tensor.BF16, tensor.FP16} {
		round := tensor.RoundBfloat16
		if p == tensor.FP16 {
			round = tensor.RoundFloat16
		}
		if err := pr.SetProductPrecision(p); err != nil {
			t.Fatalf("%s: SetProductPrecision(%v): %v", b.Name(), p, err)
		}
		checkOperandRounding(t, b, p, round)
		farFromUnrounded := false
		for i, c := range MatMulCases() {
			farFromUnrounded = checkRoundedProduct(t, b, ref, c, uint64(i), p, round) || farFromUnrounded
		}
		if !farFromUnrounded {
			t.Errorf("%s in %v: every product is within float32 tolerance of the unrounded operands' product", b.Name(), p)
		}
	}
}

// roundingProbes are values whose rounding is easy to get wrong: ties between neighbours of
// both formats, binary16's subnormals and its overflow threshold, bfloat16's largest values.
func roundingProbes(r *rand.Rand) []float32 {
	v := []float32{0, 1, -1, 1 + 1.0/2048, 1 + 3.0/2048, 1 + 1.0/256, 1 + 3.0/256, 65504, 65519.996, 65520, 1e9,
		6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 8.940697e-08, 1e-10, 3.3895314e38, 3.4e38}
	for range 500 {
		v = append(v, float32(r.NormFloat64()*math.Ldexp(1, r.IntN(50)-30)))
	}
	for i, n := 0, len(v); i < n; i++ {
		v = append(v, -v[i])
	}
	return v
}

// checkOperandRounding multiplies probes by 1 as A (a column) and as B (a row), in both
// orientations, and wants each operand's rounding exactly (one term and a product by 1 add
// no rounding of their own).
func checkOperandRounding(t *testing.T, b tensor.Backend, p tensor.Precision, round func(float32) float32) {
	t.Helper()
	probes := roundingProbes(rand.New(rand.NewPCG(5, 8)))
	one := []float32{1}
	n := len(probes)
	for _, c := range []struct {
		c      MatMulCase
		ha, hb []float32
	}{
		{MatMulCase{M: n, N: 1, K: 1}, probes, one},
		{MatMulCase{M: n, N: 1, K: 1, TransA: true}, probes, one},
		{MatMulCase{M: 1, N: n, K: 1}, one, probes},
		{MatMulCase{M: 1, N: n, K: 1, TransB: true}, one, probes},
	} {
		got := runMatMul(t, b, c.c, c.ha, c.hb, nil, make([]float32, n))
		for i, v := range probes {
			// Compared as numbers: a sum that starts from +0 loses the sign of a -0 term.
			if want := round(v); got[i] != want {
				t.Fatalf("%s in %v, %v: %g rounds to %g, want %g", b.Name(), p, c.c, v, got[i], want)
			}
		}
	}
}

// checkRoundedProduct compares c on b with the reference's product of the rounded operands
// (CheckMatMul's tolerance) and says whether it lies beyond that tolerance from the product of
// the operands as given.
func checkRoundedProduct(t *testing.T, b, ref tensor.Backend, c MatMulCase, seed uint64, p tensor.Precision, round func(float32) float32) bool {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	batch := max(c.Batch, 1)
	ha, hb := normals(r, batch*c.M*c.K), normals(r, batch*c.K*c.N)
	hbias, hout := normals(r, c.N), normals(r, batch*c.M*c.N)
	ra, rb := make([]float32, len(ha)), make([]float32, len(hb))
	for i, v := range ha {
		ra[i] = round(v)
	}
	for i, v := range hb {
		rb[i] = round(v)
	}
	got := runMatMul(t, b, c, ha, hb, hbias, hout)
	want := runMatMul(t, ref, c, ra, rb, hbias, hout)
	unrounded := runMatMul(t, ref, c, ha, hb, hbias, hout)
	sums := c.TermSums(ha, hb, hbias, hout)
	far := false
	for i := range got {
		tol := 4 * f32eps * math.Sqrt(float64(c.K+2)) * sums[i]
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			z, m, n := c.Position(i)
			t.Fatalf("%s in %v, %v: out[%d,%d,%d] = %g, rounded operands' product %g (|diff| %g > %g)", b.Name(), p, c, z, m, n, got[i], want[i], d, tol)
		}
		far = far || math.Abs(float64(got[i])-float64(unrounded[i])) > tol
	}
	return far
}
