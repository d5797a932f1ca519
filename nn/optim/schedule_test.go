package optim

import (
	"math"
	"testing"
)

func TestCosine(t *testing.T) {
	c := Cosine{MaxLR: 1e-3, MinLR: 1e-4, Warmup: 10, Total: 110}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		step int
		want float64
	}{
		{0, 1e-4}, {4, 5e-4}, {9, 1e-3}, {10, 1e-3},
		{60, 1e-4 + 0.5*(1e-3-1e-4)}, // halfway through the decay
		{110, 1e-4}, {500, 1e-4},
	}
	for _, tc := range cases {
		if got := float64(c.At(tc.step)); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("At(%d) = %g, want %g", tc.step, got, tc.want)
		}
	}
	for _, bad := range []Cosine{{MaxLR: 0, Total: 1}, {MaxLR: 1, MinLR: 2, Total: 1}, {MaxLR: 1, Warmup: -1, Total: 1}, {MaxLR: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
