package rng

import (
	"math"
	"testing"
)

func TestStateRoundTrip(t *testing.T) {
	a := New(7)
	for i := 0; i < 10; i++ {
		a.Uint64()
	}
	b := New(99)
	if err := b.SetState(a.State()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %d != %d after restore", i, x, y)
		}
	}
	if err := b.SetState([]uint64{1, 2}); err == nil {
		t.Error("short state accepted")
	}
}

func TestMoments(t *testing.T) {
	r := New(1)
	const n = 200000
	var s, s2, u float64
	for i := 0; i < n; i++ {
		x := r.Normal()
		s += x
		s2 += x * x
		u += r.Float64()
	}
	mean, variance := s/n, s2/n-(s/n)*(s/n)
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.02 || math.Abs(u/n-0.5) > 0.005 {
		t.Errorf("normal mean %.4f var %.4f, uniform mean %.4f", mean, variance, u/n)
	}
	counts := make([]int, 5)
	for i := 0; i < 50000; i++ {
		counts[r.Intn(5)]++
	}
	for k, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("Intn(5) gave %d %d times of 50000", k, c)
		}
	}
}

// Keyed streams differ with any key and repeat with the same keys.
func TestKeyed(t *testing.T) {
	a, b, c := Keyed(1, 2, 3).Uint64(), Keyed(1, 2, 3).Uint64(), Keyed(1, 3, 2).Uint64()
	if a != b || a == c || Keyed(1, 2).Uint64() == a || Keyed(0).Uint64() == Keyed(1).Uint64() {
		t.Errorf("keyed draws %x %x %x", a, b, c)
	}
}
