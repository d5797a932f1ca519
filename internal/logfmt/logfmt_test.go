package logfmt

import (
	"math"
	"testing"
)

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1.0k", 1530: "1.5k", 124439808: "124.44M", 1_200_000_000: "1.20B"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRounded(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{1234.5678, 1235}, {0.000123456, 0.0001235}, {-98.7654, -98.77}, {3, 3}, {0, 0},
	} {
		if got := Rounded(c.x); got != c.want {
			t.Errorf("Rounded(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if !math.IsNaN(Rounded(math.NaN())) || !math.IsInf(Rounded(math.Inf(-1)), -1) {
		t.Error("Rounded changed NaN or an infinity")
	}
}
