package tensor

import "testing"

func TestShapeNumel(t *testing.T) {
	cases := []struct {
		s    Shape
		want int
	}{{Shape{}, 1}, {Shape{3}, 3}, {Shape{2, 3, 5}, 30}, {Shape{4, 0}, 0}}
	for _, c := range cases {
		if got := c.s.Numel(); got != c.want {
			t.Errorf("%v.Numel() = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestDropoutScaleRate(t *testing.T) {
	const n = 200000
	for _, p := range []float32{0, 0.1, 0.5} {
		dropped := 0
		for i := uint32(0); i < n; i++ {
			s := DropoutScale(42, i, p)
			if s == 0 {
				dropped++
			} else if s != 1/(1-p) {
				t.Fatalf("p=%v: kept scale %v, want %v", p, s, 1/(1-p))
			}
		}
		rate := float64(dropped) / n
		if rate < float64(p)-0.01 || rate > float64(p)+0.01 {
			t.Errorf("p=%v: dropped fraction %.4f", p, rate)
		}
	}
	if DropoutScale(1, 7, 0.5) == DropoutScale(2, 7, 0.5) && DropoutScale(1, 8, 0.5) == DropoutScale(2, 8, 0.5) &&
		DropoutScale(1, 9, 0.5) == DropoutScale(2, 9, 0.5) && DropoutScale(1, 10, 0.5) == DropoutScale(2, 10, 0.5) {
		t.Error("seeds 1 and 2 give the same first four masks")
	}
}
