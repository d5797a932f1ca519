package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFastMath checks tanh64 and tanhCoshf against package math and counts the float32 results that are
// not the correctly rounded ones (rounding the float64 math result stands in for them).
func TestFastMath(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const n = 400000
	var expMiss, tanhMiss, coshMiss int
	for i := 0; i < n; i++ {
		x := (r.Float64()*2 - 1) * 720
		if i%2 == 0 {
			x /= 8 // dense near the range that matters
		}
		want := math.Exp(x)
		if got := exp64(x); math.Abs(got-want) > 1e-14*want {
			t.Fatalf("exp64(%v) = %v, want %v", x, got, want)
		}
		y := float64(float32(x / 40))
		if got, want := tanh64(y), math.Tanh(y); math.Abs(got-want) > 1e-15+1e-13*math.Abs(want) {
			t.Fatalf("tanh64(%v) = %v, want %v", y, got, want)
		}
		f := float32(x / 8)
		if expf(f) != float32(math.Exp(float64(f))) {
			expMiss++
		}
		th, ch := tanhCoshf(f / 4)
		if th != tanhf(f/4) || th != float32(math.Tanh(float64(f/4))) {
			tanhMiss++
		}
		if ch != float32(math.Cosh(float64(f/4))) {
			coshMiss++
		}
	}
	for _, v := range []float64{0, 1e-300, -1e-12, 1e-6, 0.0624, 0.0626, 19.99, 20, 1e300, math.Inf(1)} {
		for _, y := range []float64{v, -v} {
			if got, want := tanh64(y), math.Tanh(y); math.Abs(got-want) > 1e-15+1e-13*math.Abs(want) {
				t.Errorf("tanh64(%v) = %v, want %v", y, got, want)
			}
		}
	}
	for _, x := range []float32{-200, -104, -88, 88.7, 89, float32(math.Inf(1)), float32(math.Inf(-1))} {
		if got, want := expf(x), float32(math.Exp(float64(x))); got != want {
			t.Errorf("expf(%v) = %v, want %v", x, got, want)
		}
	}
	if !math.IsNaN(float64(expf(float32(math.NaN())))) || !math.IsNaN(tanh64(math.NaN())) {
		t.Error("NaN not propagated")
	}
	// A handful of ties may round the other way; more would mean a real error.
	if expMiss > n/10000 || tanhMiss > n/10000 || coshMiss > n/10000 {
		t.Errorf("float32 results not correctly rounded: exp %d, tanh %d, cosh %d of %d", expMiss, tanhMiss, coshMiss, n)
	}
	t.Logf("not correctly rounded: exp %d, tanh %d, cosh %d of %d", expMiss, tanhMiss, coshMiss, n)
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
