package objective

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// Under samples from the policy, k1 and k3 are unbiased estimators of KL(policy || ref); k2 is
// not but is non-negative. Checked exactly over a categorical distribution.
func TestKLEstimatorExpectations(t *testing.T) {
	r := rng.New(1)
	const V = 7
	pl, ql := make([]float64, V), make([]float64, V)
	for i := range pl {
		pl[i], ql[i] = r.Normal(), r.Normal()
	}
	lp := LogSoftmax(nil, pl, 1)
	lq := LogSoftmax(nil, ql, 1)
	var exact float64
	for i := range lp {
		exact += math.Exp(lp[i]) * (lp[i] - lq[i])
	}
	for _, est := range []KLEstimator{KLK1, KLK3} {
		var e float64
		for i := range lp {
			k, _ := est.KL(lp[i], lq[i])
			e += math.Exp(lp[i]) * k
		}
		if math.Abs(e-exact) > 1e-12 {
			t.Errorf("%s: expectation %v, exact KL %v", est, e, exact)
		}
	}
	for _, d := range []float64{-3, -0.5, 0, 0.5, 3} {
		for _, est := range []KLEstimator{KLK2, KLK3} {
			if k, _ := est.KL(d, 0); k < 0 || (d == 0 && k != 0) {
				t.Errorf("%s(%v) = %v", est, d, k)
			}
		}
		for _, est := range []KLEstimator{KLK1, KLK2, KLK3} {
			_, g := est.KL(d, 0.3)
			kp, _ := est.KL(d+1e-6, 0.3)
			km, _ := est.KL(d-1e-6, 0.3)
			if fd := (kp - km) / 2e-6; math.Abs(fd-g) > 1e-7 {
				t.Errorf("%s derivative at %v: %v, finite difference %v", est, d, g, fd)
			}
		}
	}
}
