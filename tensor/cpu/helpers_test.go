package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// mk returns a float32 tensor holding data, as a view at a non-zero offset into a larger
// storage so every op is also checked to honour view offsets.
func mk(t testing.TB, b *Backend, data []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	n := tensor.Shape(shape).Numel()
	if len(data) != n {
		t.Fatalf("mk: %d values for shape %v", len(data), shape)
	}
	whole, err := tensor.New(b, tensor.Float32, n+5)
	if err != nil {
		t.Fatal(err)
	}
	ws := Float32s(whole)
	for i := range ws {
		ws[i] = float32(math.NaN()) // elements outside the view must never be read
	}
	v := whole.View(3, shape...)
	copy(Float32s(v), data)
	return v
}

func mkI(t testing.TB, b *Backend, data []int32, shape ...int) *tensor.Tensor {
	t.Helper()
	whole, err := tensor.New(b, tensor.Int32, len(data)+4)
	if err != nil {
		t.Fatal(err)
	}
	v := whole.View(2, shape...)
	copy(Int32s(v), data)
	return v
}

func randn(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * scale)
	}
	return out
}

func randTokens(r *rand.Rand, n, V int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(V))
	}
	return out
}

func to64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

// near checks got against want with |got-want| <= atol + rtol*|want| element by element.
func near(t testing.TB, name string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(g) || math.Abs(g-w) > atol+rtol*math.Abs(w) {
			if bad < 5 {
				t.Errorf("%s[%d] = %.9g, want %.9g (diff %.3g)", name, i, g, w, g-w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values out of tolerance", name, bad, len(got))
	}
}

// fdGrad returns the central finite-difference gradient of f at x (float64, step h).
func fdGrad(x []float64, h float64, f func([]float64) float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		old := x[i]
		x[i] = old + h
		fp := f(x)
		x[i] = old - h
		fm := f(x)
		x[i] = old
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// plus returns base + d elementwise, for checking that backward ops accumulate.
func plus(base []float32, d []float64) []float64 {
	out := make([]float64, len(d))
	for i := range d {
		out[i] = float64(base[i]) + d[i]
	}
	return out
}

func dot(a []float64, b []float32) float64 {
	var s float64
	for i := range a {
		s += a[i] * float64(b[i])
	}
	return s
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
