package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// f32eps is the unit roundoff of float32.
const f32eps = 1.0 / (1 << 24)

// MatMulCase is one product of Backend.MatMul: its dimensions and flags (see
// tensor.MatMulParams), and where its operands start.
type MatMulCase struct {
	M, N, K, Batch   int
	TransA, TransB   bool
	Bias, Accumulate bool
	Aligned          bool // operands start at multiples of 4 elements (vector loads); else at odd offsets
}

// String names the case in failure messages.
func (c MatMulCase) String() string {
	return fmt.Sprintf("M%d_N%d_K%d_b%d_ta%v_tb%v_bias%v_acc%v", c.M, c.N, c.K, c.Batch, c.TransA, c.TransB, c.Bias, c.Accumulate)
}

// params returns the case's tensor.MatMulParams.
func (c MatMulCase) params() tensor.MatMulParams {
	return tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.TransA, TransB: c.TransB, Accumulate: c.Accumulate, Batch: c.Batch}
}

// MatMulFlagCombos are the (batch, bias, accumulate) variants MatMulCases cycles through.
var MatMulFlagCombos = []struct {
	Batch            int
	Bias, Accumulate bool
}{{1, false, false}, {3, true, false}, {1, true, true}, {3, false, true}, {0, true, false}, {3, true, true}, {1, false, true}, {3, false, false}}

// MatMulCases are awkward shapes (1-sized dimensions, sizes that are not multiples of common
// tiles) with all four transposes, each transpose meeting every (batch, bias, accumulate)
// combination across the shapes; then K = 0, where out is the bias, or out plus the bias.
func MatMulCases() []MatMulCase {
	var cases []MatMulCase
	for si, M := range []int{1, 7, 33, 65} {
		for sj, N := range []int{1, 5, 130} {
			for sk, K := range []int{1, 3, 97} {
				s := si*9 + sj*3 + sk
				for tr := range 4 {
					f := MatMulFlagCombos[(s+3*tr)%len(MatMulFlagCombos)]
					cases = append(cases, MatMulCase{M: M, N: N, K: K, Batch: f.Batch, TransA: tr&1 != 0, TransB: tr&2 != 0, Bias: f.Bias, Accumulate: f.Accumulate})
				}
			}
		}
	}
	for _, f := range MatMulFlagCombos {
		cases = append(cases, MatMulCase{M: 3, N: 4, K: 0, Batch: f.Batch, Bias: f.Bias, Accumulate: f.Accumulate})
	}
	return cases
}

// RunMatMul runs MatMulCases on the backend newBackend opens (and on each variant, with
// windows of 1000 elements) against the reference; case i draws its inputs from seed i.
func RunMatMul(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	backends, ref, closeAll := underTest(t, newBackend, opts)
	defer closeAll()
	for _, be := range backends {
		for i, c := range MatMulCases() {
			checkMatMul(t, be.b, ref, c, uint64(i), opts.Bitwise)
		}
	}
}

// CheckMatMul runs c on b and on ref with random inputs drawn from seed and compares every
// output within 4u·sqrt(K+2)·S, where u is float32's unit roundoff and
// S = sum_k |a_ik b_kj| + |bias_j| + |out_ij| (the last when accumulating): two float32 sums
// of K+2 terms in different orders stay far below that, while a wrong index or a missing term
// is of the order of S.
func CheckMatMul(t testing.TB, b, ref tensor.Backend, c MatMulCase, seed uint64) {
	t.Helper()
	checkMatMul(t, b, ref, c, seed, false)
}

// checkMatMul is CheckMatMul, asking for the reference's bits when bitwise.
func checkMatMul(t testing.TB, b, ref tensor.Backend, c MatMulCase, seed uint64, bitwise bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	batch := max(c.Batch, 1)
	ha, hb := normals(r, batch*c.M*c.K), normals(r, batch*c.K*c.N)
	hbias, hout := normals(r, c.N), normals(r, batch*c.M*c.N)

	got := runMatMul(t, b, c, ha, hb, hbias, hout)
	want := runMatMul(t, ref, c, ha, hb, hbias, hout)

	sums := c.TermSums(ha, hb, hbias, hout)
	for i := range got {
		if bitwise {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				z, m, n := c.Position(i)
				t.Fatalf("%v: out[%d,%d,%d] = %g, reference %g (want the same bits)", c, z, m, n, got[i], want[i])
			}
			continue
		}
		tol := 4 * f32eps * math.Sqrt(float64(c.K+2)) * sums[i]
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			z, m, n := c.Position(i)
			t.Fatalf("%v: out[%d,%d,%d] = %g, reference %g (|diff| %g > %g)", c, z, m, n, got[i], want[i], d, tol)
		}
	}
}

// TermSums returns, for each output of c (batch by batch, each row-major), the sum of the
// magnitudes of its terms: S = sum_k |a_ik b_kj|, plus |bias_j| with Bias and the initial
// |out_ij| with Accumulate, the scale a float32 product's rounding error is bounded in. a, b,
// bias and out are the host operands, laid out as MatMul reads them.
func (c MatMulCase) TermSums(a, b, bias, out []float32) []float64 {
	at := func(z, m, k int) float64 {
		if c.TransA {
			return float64(a[z*c.M*c.K+k*c.M+m])
		}
		return float64(a[z*c.M*c.K+m*c.K+k])
	}
	bt := func(z, k, n int) float64 {
		if c.TransB {
			return float64(b[z*c.K*c.N+n*c.K+k])
		}
		return float64(b[z*c.K*c.N+k*c.N+n])
	}
	batch := max(c.Batch, 1)
	sums := make([]float64, batch*c.M*c.N)
	for i := range sums {
		z, m, n := c.Position(i)
		s := 0.0
		for k := range c.K {
			s += math.Abs(at(z, m, k) * bt(z, k, n))
		}
		if c.Bias {
			s += math.Abs(float64(bias[n]))
		}
		if c.Accumulate {
			s += math.Abs(float64(out[i]))
		}
		sums[i] = s
	}
	return sums
}

// Position returns the batch, row and column of output i of c.
func (c MatMulCase) Position(i int) (z, m, n int) {
	return i / (c.M * c.N), i / c.N % c.M, i % c.N
}

// runMatMul multiplies the host operands on b, placed at c's offsets (odd ones unless
// c.Aligned), and returns out.
func runMatMul(t testing.TB, b tensor.Backend, c MatMulCase, ha, hb, hbias, hout []float32) []float32 {
	t.Helper()
	oa, ob, oo := 3, 5, 1
	if c.Aligned {
		oa, ob, oo = 4, 8, 0
	}
	a, bm, out := OnBackend(t, b, ha, oa), OnBackend(t, b, hb, ob), OnBackend(t, b, hout, oo)
	var bias *tensor.Tensor
	if c.Bias {
		bias = OnBackend(t, b, hbias, 7)
	}
	b.MatMul(out, a, bm, bias, c.params())
	got := download(t, b, out)
	freeAll(b, a, bm, out, bias)
	return got
}

// normals returns n standard normal values.
func normals(r *rand.Rand, n int) []float32 { return Normals(r, n, 1, 0) }

// RunBiasBackward compares dbias += the column sums of dout with the reference within
// 4u·sqrt(N+1)·(sum_i |dout_ij| + |dbias_j|), on the backend newBackend opens and on each
// variant (with windows of 1000 elements).
func RunBiasBackward(t *testing.T, newBackend func(t *testing.T) tensor.Backend, opts Options) {
	backends, ref, closeAll := underTest(t, newBackend, opts)
	defer closeAll()
	for _, be := range backends {
		for _, sh := range [][2]int{{1, 1}, {7, 5}, {300, 33}, {1000, 70}, {2, 1500}} {
			N, C := sh[0], sh[1]
			r := rand.New(rand.NewPCG(uint64(N), uint64(C)))
			hd, hb := normals(r, N*C), normals(r, C)
			got := biasBackward(t, be.b, hd, hb, 3, 1, N, C)
			want := biasBackward(t, ref, hd, hb, 0, 0, N, C)
			what := fmt.Sprintf("N=%d C=%d%s: dbias", N, C, be.suffix)
			for j := range C {
				s := math.Abs(float64(hb[j]))
				for i := range N {
					s += math.Abs(float64(hd[i*C+j]))
				}
				checkValue(t, what, j, got[j], want[j], 4*f32eps*math.Sqrt(float64(N+1))*s, opts.Bitwise)
			}
		}
	}
}

// biasBackward runs BiasBackward on b with dout and dbias at the given offsets and returns dbias.
func biasBackward(t testing.TB, b tensor.Backend, hd, hb []float32, offDout, offBias, N, C int) []float32 {
	t.Helper()
	d, bias := OnBackend(t, b, hd, offDout), OnBackend(t, b, hb, offBias)
	b.BiasBackward(bias, d, N, C)
	got := download(t, b, bias)
	freeAll(b, d, bias)
	return got
}
