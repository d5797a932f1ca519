package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFastMath checks tanhFromExp and coshFromExp against package math, counting float32
// results that differ from rounding math's float64 result (a stand-in for correct rounding).
func TestFastMath(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const n = 400000
	u := make([]float32, n)
	for i := range u {
		u[i] = float32(r.NormFloat64() * 3)
		if i%4 == 0 {
			u[i] /= 100 // the series range
		}
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-7, 0.0624, 0.0625, -0.0626, 19.99, 20, -20.01,
		44, 89, 89.5, 200, 1e30, float32(math.Inf(1)), float32(math.Inf(-1))}
	u = append(u, special...)
	e := make([]float64, len(u))
	for i, v := range u {
		e[i] = math.Abs(float64(v))
	}
	expSlice(e)
	var tanhMiss, coshMiss int
	for i, v := range u {
		th, ch := tanhFromExp(v, e[i]), coshFromExp(e[i])
		wt, wc := float32(math.Tanh(float64(v))), float32(math.Cosh(float64(v)))
		if th != wt {
			if i >= n || math.Abs(float64(th-wt)) > 1e-7*math.Abs(float64(wt)) {
				t.Errorf("tanh(%v) = %v, want %v", v, th, wt)
			}
			tanhMiss++
		}
		if ch != wc {
			if i >= n || math.Abs(float64(ch-wc)) > 1e-7*math.Abs(float64(wc)) {
				t.Errorf("cosh(%v) = %v, want %v", v, ch, wc)
			}
			coshMiss++
		}
		if math.Signbit(float64(th)) != math.Signbit(float64(v)) {
			t.Errorf("tanh(%v) = %v has the wrong sign", v, th)
		}
	}
	nan := float32(math.NaN())
	en := []float64{math.NaN()}
	expSlice(en)
	if th := tanhFromExp(nan, en[0]); th == th {
		t.Errorf("tanh(NaN) = %v", th)
	}
	// A handful of near-ties may round the other way; more would mean a real error.
	if tanhMiss > n/10000 || coshMiss > n/10000 {
		t.Errorf("float32 results not correctly rounded: tanh %d, cosh %d of %d", tanhMiss, coshMiss, n)
	}
	t.Logf("not correctly rounded: tanh %d, cosh %d of %d", tanhMiss, coshMiss, n)
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
	a, b := make([]float32, len(x)), make([]float32, len(x))
	geluForward(a, x)
	geluForwardGo(b, x)
	ga, gb := clone(d), clone(d)
	geluBackward(ga, x, d)
	geluBackwardGo(gb, x, d)
	for i := range x {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			t.Errorf("gelu(%v): kernel %v, Go %v", x[i], a[i], b[i])
		}
		if math.Float32bits(ga[i]) != math.Float32bits(gb[i]) && !(ga[i] != ga[i] && gb[i] != gb[i]) {
			t.Errorf("gelu'(%v): kernel %v, Go %v", x[i], ga[i], gb[i])
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
