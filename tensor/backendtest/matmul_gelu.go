package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// MatMulGeluCases are the products RunMatMulGelu fuses with GELU: bias, accumulation,
// batches, odd and aligned shapes, and a row longer than 1000 elements.
func MatMulGeluCases() []MatMulCase {
	return []MatMulCase{
		{M: 7, N: 5, K: 3, Bias: true},
		{M: 33, N: 130, K: 97, TransB: true, Bias: true},
		{M: 64, N: 128, K: 256, TransB: true, Bias: true, Aligned: true},
		{M: 130, N: 36, K: 44, TransA: true, Accumulate: true, Bias: true, Batch: 2},
		{M: 20, N: 40, K: 300, Batch: 3, Aligned: true},
		{M: 2, N: 1500, K: 3, Bias: true},
	}
}

// RunMatMulGelu checks MatMul with GeluOut on the backend newBackend opens and on each variant
// (windows of 1000 elements): the fused product must give the bits of MatMul followed by
// GeluForward on the same backend, with GeluOut a separate tensor and out itself, and its
// GELU must be GELU's tanh form, in float64, within 1e-6·(1+|gelu|). Case i draws its inputs
// from seed i.
func RunMatMulGelu(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	backends, _, closeAll := underTest(t, newBackend, opts)
	defer closeAll()
	for _, be := range backends {
		for i, c := range MatMulGeluCases() {
			CheckMatMulGelu(t, be.b, c, uint64(i), be.suffix)
		}
	}
}

// CheckMatMulGelu runs c with GeluOut on b, with random inputs drawn from seed, and checks it
// as RunMatMulGelu describes; suffix labels b in failure messages.
func CheckMatMulGelu(t testing.TB, b tensor.Backend, c MatMulCase, seed uint64, suffix string) {
	t.Helper()
	out, gelu := MatMulGelu(t, b, c, seed)
	wantOut, wantGelu := matMulGelu(t, b, c, seed, false, false)
	_, inPlace := matMulGelu(t, b, c, seed, true, true)
	for i := range wantOut {
		checkValue(t, fmt.Sprintf("%v%s: out", c, suffix), i, out[i], wantOut[i], 0, true)
		checkValue(t, fmt.Sprintf("%v%s: gelu", c, suffix), i, gelu[i], wantGelu[i], 0, true)
		checkValue(t, fmt.Sprintf("%v%s: gelu in place", c, suffix), i, inPlace[i], wantGelu[i], 0, true)
		x := float64(out[i])
		u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
		want := 0.5 * x * (1 + math.Tanh(u))
		if d := math.Abs(float64(gelu[i]) - want); !(d <= 1e-6*(1+math.Abs(want))) {
			t.Fatalf("%v%s: gelu(%g) = %g, want %g", c, suffix, x, gelu[i], want)
		}
	}
}

// MatMulGelu runs c on b as one fused product, GeluOut a tensor of its own, with the inputs
// CheckMatMulGelu draws from seed, and returns out and the GELU: for a backend's checks of
// what the fused product runs.
func MatMulGelu(t testing.TB, b tensor.Backend, c MatMulCase, seed uint64) (out, gelu []float32) {
	t.Helper()
	return matMulGelu(t, b, c, seed, true, false)
}

// matMulGelu runs c on b with the inputs of seed, either fused (GeluOut set; inPlace makes it
// out itself) or as MatMul then GeluForward, and returns out and the GELU.
func matMulGelu(t testing.TB, b tensor.Backend, c MatMulCase, seed uint64, fused, inPlace bool) (out, gelu []float32) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	batch := max(c.Batch, 1)
	n := batch * c.M * c.N
	off := 1
	if c.Aligned {
		off = 0
	}
	a, bm := OnBackend(t, b, normals(r, batch*c.M*c.K), off), OnBackend(t, b, normals(r, batch*c.K*c.N), 0)
	o, g := OnBackend(t, b, normals(r, n), 0), OnBackend(t, b, make([]float32, n), off)
	var bias *tensor.Tensor
	if c.Bias {
		bias = OnBackend(t, b, normals(r, c.N), 0)
	}
	if inPlace {
		g = o
	}
	p := c.params()
	if fused {
		p.GeluOut = g
		b.MatMul(o, a, bm, bias, p)
	} else {
		b.MatMul(o, a, bm, bias, p)
		b.GeluForward(g, o)
	}
	out, gelu = download(t, b, o), download(t, b, g)
	freeAll(b, a, bm, o, g, bias)
	return out, gelu
}
