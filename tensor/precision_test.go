package tensor

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// half decodes IEEE binary16 bits, independently of RoundFloat16's bit arithmetic.
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * frac * math.Ldexp(1, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + frac/1024) * math.Ldexp(1, exp-15)
}

// nearestOnGrid is the nearest of grid's values to v, ties to the one with the even index
// (grid holds consecutive values of one sign, so an even index is an even significand).
func nearestOnGrid(grid []float64, v float64) float64 {
	i := sort.SearchFloat64s(grid, v)
	if i == 0 {
		return grid[0]
	}
	if i == len(grid) {
		return grid[len(grid)-1]
	}
	lo, hi := grid[i-1], grid[i]
	switch dl, dh := v-lo, hi-v; {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case (i-1)%2 == 0:
		return lo
	}
	return hi
}

func TestRoundFloat16MatchesNearestBinary16(t *testing.T) {
	// The non-negative finite binary16 values in order, then 65520 (halfway to the next
	// power of two) standing in for infinity, which is where float32 rounding overflows.
	var grid []float64
	for h := uint16(0); h < 0x7c00; h++ {
		grid = append(grid, half(h))
	}
	grid = append(grid, math.Inf(1))
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(v float32) {
		want := nearestOnGrid(grid[:len(grid)-1], math.Abs(float64(v)))
		if math.Abs(float64(v)) >= 65520 {
			want = math.Inf(1)
		}
		if v < 0 {
			want = -want
		}
		if got := float64(RoundFloat16(v)); got != want {
			t.Fatalf("RoundFloat16(%g) = %g, want %g", v, got, want)
		}
	}
	for _, v := range []float32{0, 1, 65504, 65519.99, 65520, 1e9, 5.96e-8, 2.98e-8, 2.99e-8, 6.1e-5, 1 + 1.0/2048, 1 + 3.0/2048} {
		check(v)
		check(-v)
	}
	for range 200000 {
		e := rng.IntN(50) - 30
		check(float32(rng.NormFloat64() * math.Ldexp(1, e)))
	}
	for h := uint16(0); h < 0x7c00; h++ { // every value and every midpoint between neighbours
		check(float32(half(h)))
		check(float32((half(h) + half(h+1)) / 2))
	}
	if !math.IsNaN(float64(RoundFloat16(float32(math.NaN())))) {
		t.Fatal("NaN did not stay NaN")
	}
}

func TestRoundBfloat16MatchesNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		v := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(v)) {
			if !math.IsNaN(float64(RoundBfloat16(v))) {
				t.Fatalf("RoundBfloat16(NaN %#x) is not NaN", math.Float32bits(v))
			}
			continue
		}
		b := math.Float32bits(v)
		lo := math.Float32frombits(b &^ 0xffff)
		hi := math.Float32frombits(b&^0xffff + 0x10000) // the next bfloat16 away from zero
		dl := math.Abs(float64(v) - float64(lo))
		hi64 := float64(hi)
		if math.IsInf(hi64, 0) { // float32's overflow point: the value past the largest finite
			hi64 = math.Copysign(math.Ldexp(1, 128), hi64)
		}
		dh := math.Abs(hi64 - float64(v))
		want := lo
		if dh < dl || (dh == dl && (b>>16)&1 == 1) {
			want = hi
		}
		if got := RoundBfloat16(v); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundBfloat16(%g) = %g, want %g", v, got, want)
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for i, name := range Precisions {
		p, err := ParsePrecision(name)
		if err != nil || p != Precision(i) || p.String() != name {
			t.Errorf("ParsePrecision(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := ParsePrecision("fp8"); err == nil {
		t.Error("fp8 was accepted")
	}
}
