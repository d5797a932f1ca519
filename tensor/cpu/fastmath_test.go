package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGeluMath checks exp32 and tanhSech2 against package math in float32 ulps, over the
// GELU's argument range, the series boundary and the clamp.
func TestGeluMath(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const n = 400000
	u := make([]float32, n)
	for i := range u {
		u[i] = float32(r.NormFloat64() * 3)
		if i%4 == 0 {
			u[i] /= 100 // the series range
		}
	}
	u = append(u, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-7, 0.0624, 0.0625, -0.0626, 0.07, 1, 9, 14.99, 15,
		-20.01, 44, 89, 200, 1e30, float32(math.Inf(1)), float32(math.Inf(-1)))
	ulps := func(got float32, want float64) float64 {
		w := float32(want)
		if got == w {
			return 0
		}
		return math.Abs(float64(got)-want) / float64(math.Nextafter32(float32(math.Abs(want)), float32(math.Inf(1)))-float32(math.Abs(want)))
	}
	var worstT, worstS, worstE float64
	for _, v := range u {
		th, s2 := tanhSech2(v)
		a := math.Abs(float64(v))
		worstT = max(worstT, ulps(th, math.Tanh(float64(v))))
		if a <= float64(geluClamp) {
			c := math.Cosh(float64(v))
			worstS = max(worstS, ulps(s2, 1/(c*c)))
			x := float32(2 * a)
			worstE = max(worstE, ulps(exp32(x), math.Exp(float64(x))))
		}
		if math.Signbit(float64(th)) != math.Signbit(float64(v)) {
			t.Errorf("tanh(%v) = %v has the wrong sign", v, th)
		}
	}
	// The cancellation in 1 - 2/(e+1) just above the series range costs a few ulps of tanh;
	// GELU adds 1 to tanh, so this is a fraction of an ulp of its result.
	if worstE > 1.5 || worstS > 6 || worstT > 6 {
		t.Errorf("worst error in float32 ulps: exp %.2f, sech² %.2f, tanh %.2f", worstE, worstS, worstT)
	}
	t.Logf("worst error in float32 ulps: exp %.2f, sech² %.2f, tanh %.2f", worstE, worstS, worstT)
	if th, _ := tanhSech2(float32(math.NaN())); th == th {
		t.Errorf("tanh(NaN) = %v", th)
	}
}

// TestGeluKernels checks that geluForward/geluBackward (vector kernels where the CPU has them)
// give the same bits as the portable geluForwardGo/geluBackwardGo.
func TestGeluKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	x := make([]float32, 4099)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
		if i%5 == 0 {
			x[i] /= 50
		}
	}
	copy(x, []float32{0, float32(math.Copysign(0, -1)), 1e-20, -0.0701, 0.07, 5.9, -5.95, 6, 7, 100, -100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 3e38, -3e38})
	d := make([]float32, len(x))
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	defer func(v bool) { geluAVX512 = v }(geluAVX512)
	// The sixteen-lane kernels where the CPU has them, then the eight-lane ones alone.
	for _, wide := range []bool{geluAVX512, false} {
		geluAVX512 = wide
		a, b := make([]float32, len(x)), make([]float32, len(x))
		geluForward(a, x)
		geluForwardGo(b, x)
		ga, gb := clone(d), clone(d)
		geluBackward(ga, x, d)
		geluBackwardGo(gb, x, d)
		for i := range x {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				t.Errorf("wide=%v: gelu(%v): kernel %v, Go %v", wide, x[i], a[i], b[i])
			}
			if math.Float32bits(ga[i]) != math.Float32bits(gb[i]) && !(ga[i] != ga[i] && gb[i] != gb[i]) {
				t.Errorf("wide=%v: gelu'(%v): kernel %v, Go %v", wide, x[i], ga[i], gb[i])
			}
		}
	}
}

// TestExpSlice checks the vector exponential (and its portable twin) against math.Exp,
// including lengths that leave a tail and the clamped and NaN inputs.
func TestExpSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, impl := range []struct {
		name string
		fn   func([]float64)
	}{{"expSlice", expSlice}, {"expSliceGo", expSliceGo}} {
		for _, n := range []int{1, 3, 4, 7, 1001} {
			x := make([]float64, n)
			for i := range x {
				x[i] = (r.Float64()*2 - 1) * 700
				if i%3 == 0 {
					x[i] /= 100
				}
			}
			want := make([]float64, n)
			for i, v := range x {
				want[i] = math.Exp(v)
			}
			impl.fn(x)
			for i := range x {
				if math.Abs(x[i]-want[i]) > 1e-14*want[i] {
					t.Fatalf("%s n=%d: [%d] = %v, want %v", impl.name, n, i, x[i], want[i])
				}
			}
		}
		x := []float64{math.NaN(), math.Inf(-1), -1e6, -708, 0, 709, math.Inf(1), math.Copysign(0, -1)}
		impl.fn(x)
		want := []float64{math.NaN(), math.Exp(-708), math.Exp(-708), math.Exp(-708), 1, math.Exp(709), math.Exp(709), 1}
		for i := range x {
			if !(x[i] == want[i] || math.Abs(x[i]-want[i]) <= 1e-14*want[i]) && !(math.IsNaN(x[i]) && math.IsNaN(want[i])) {
				t.Errorf("%s special [%d] = %v, want %v", impl.name, i, x[i], want[i])
			}
		}
	}
}

// edgeValues32 are the float32 inputs where the exponential and GELU kernels branch, clamp,
// overflow or underflow: zeros, denormals, the exponential's overflow (ln FLT_MAX ≈ 88.7228)
// and underflow limits (ln 2^-126, ln 2^-149, ln 2^-150 and the cutoff at -104), GELU's series
// boundary (u = 0.25 at x ≈ 0.3118), its clamp (|u| = 15 at x ≈ 5.49) and the x where x³
// overflows, the extremes, the infinities and NaN.
var edgeValues32 = []float32{
	0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-40, -1e-40, 1e-30, -1e-30, 1.2e-38, -1.2e-38,
	0.31, 0.3118, -0.3118, 0.312, 0.25, 5.49, -5.49, 5.5, 15, -15,
	88.72283, 88.72284, 88.7229, 89, -89, 89.5, 100, 6.9e12, -6.9e12, 7e12, 1e13, -1e13, 1e30, -1e30,
	-87.33654, -87.34, -103.2789, -103.28, -103.97208, -103.99, -104, -104.00001, -105,
	math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// TestVectorKernelsEdgeCases checks the vector exponential (expShiftSum) and GELU kernels
// against the portable loops bit for bit (NaN for NaN) with every edge value in every lane
// position and lengths that leave a tail for the portable loop.
func TestVectorKernelsEdgeCases(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	for _, n := range []int{16, 19} {
		for _, v := range edgeValues32 {
			for lane := 0; lane < 8; lane++ {
				x := randn(r, n, 3)
				x[lane], x[lane+8] = v, -v
				for _, shift := range []float32{0, 1.5} {
					checkExpShiftSum(t, x, shift)
				}
				checkGelu(t, x, randn(r, n, 1))
			}
		}
	}
}

func checkExpShiftSum(t *testing.T, src []float32, shift float32) {
	t.Helper()
	dst := make([]float32, len(src))
	sum := expShiftSum(dst, src, shift)
	want := make([]float32, len(src))
	var acc [8]float32
	for i, v := range src {
		want[i] = expf32(v - shift)
		acc[i%8] += want[i]
	}
	ws := lanes8Sum(&acc)
	for i := range src {
		if !sameFloat32(dst[i], want[i]) {
			t.Fatalf("expShiftSum(%v - %v) = %v, portable %v (lane %d of %d)", src[i], shift, dst[i], want[i], i, len(src))
		}
	}
	if !sameFloat32(sum, ws) {
		t.Fatalf("expShiftSum of %v: sum %v, portable %v", src, sum, ws)
	}
}

func checkGelu(t *testing.T, x, dout []float32) {
	t.Helper()
	a, b := make([]float32, len(x)), make([]float32, len(x))
	geluForward(a, x)
	geluForwardGo(b, x)
	ga, gb := clone(dout), clone(dout)
	geluBackward(ga, x, dout)
	geluBackwardGo(gb, x, dout)
	for i := range x {
		if !sameFloat32(a[i], b[i]) {
			t.Fatalf("gelu(%v) = %v, portable %v (lane %d of %d)", x[i], a[i], b[i], i, len(x))
		}
		if !sameFloat32(ga[i], gb[i]) {
			t.Fatalf("gelu'(%v) = %v, portable %v (lane %d of %d)", x[i], ga[i], gb[i], i, len(x))
		}
	}
}

// sameFloat32 reports whether a and b have the same bits, or are both NaN.
func sameFloat32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestDivScalar checks the softmax's division by its sum (a vector kernel where there is one)
// against x/s element by element, bit for bit, for every edge value as x and as s and lengths
// that leave a tail.
func TestDivScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	for _, n := range []int{1, 4, 7, 8, 13} {
		for _, s := range append([]float32{3, 0.1}, edgeValues32...) {
			x := randn(r, n, 2)
			copy(x, edgeValues32[r.IntN(len(edgeValues32)):])
			got := clone(x)
			divScalar(got, s)
			for i, v := range x {
				if want := v / s; !sameFloat32(got[i], want) {
					t.Fatalf("n=%d: %v / %v = %v, want %v", n, v, s, got[i], want)
				}
			}
		}
	}
}

// TestDivScale checks the fused loss's division and scaling (a vector kernel where there is
// one) against (x/s)*a element by element, bit for bit, for every edge value as x, s and a.
func TestDivScale(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{1, 7, 8, 13, 33} {
		for _, s := range append([]float32{3, 0.1}, edgeValues32...) {
			for _, a := range []float32{1.0 / 256, -2, 0, float32(math.Inf(1)), float32(math.NaN()), 1e-30} {
				x := randn(r, n, 2)
				copy(x, edgeValues32[r.IntN(len(edgeValues32)):])
				got := clone(x)
				divScale(got, s, a)
				for i, v := range x {
					if want := float32(v/s) * a; !sameFloat32(got[i], want) {
						t.Fatalf("n=%d: (%v / %v) * %v = %v, want %v", n, v, s, a, got[i], want)
					}
				}
			}
		}
	}
}

// TestMaxf32 checks the row maximum (a vector kernel on the leading multiple of 32 where there
// is one) against a scan with llm.c's v > max test: NaN skipped, -Inf for a row of NaN,
// every edge value in every lane, and lengths around the kernel's 32.
func TestMaxf32(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	scan := func(x []float32) float32 {
		m := float32(math.Inf(-1))
		for _, v := range x {
			if v > m {
				m = v
			}
		}
		return m
	}
	nan := float32(math.NaN())
	for _, n := range []int{0, 1, 5, 31, 32, 33, 64, 95, 100, 257} {
		for trial := 0; trial < 40; trial++ {
			x := randn(r, n, 3)
			for k := 0; k < n/8+1 && n > 0; k++ {
				x[r.IntN(n)] = edgeValues32[r.IntN(len(edgeValues32))]
			}
			if got, want := maxf32(x), scan(x); got != want && !(got == 0 && want == 0) {
				t.Fatalf("n=%d: maxf32 %v, scan %v (of %v)", n, got, want, x)
			}
		}
		allNaN := make([]float32, n)
		for i := range allNaN {
			allNaN[i] = nan
		}
		if got := maxf32(allNaN); !math.IsInf(float64(got), -1) {
			t.Fatalf("n=%d NaN: maxf32 %v, want -Inf", n, got)
		}
		for pos := 0; pos < n; pos++ { // the largest, then a NaN, in each position in turn
			x := randn(r, n, 1)
			x[pos] = 100
			if got := maxf32(x); got != 100 {
				t.Fatalf("n=%d: the maximum at %d: maxf32 %v", n, pos, got)
			}
			x[pos] = nan
			if got, want := maxf32(x), scan(x); got != want {
				t.Fatalf("n=%d: NaN at %d: maxf32 %v, want %v", n, pos, got, want)
			}
		}
	}
}
