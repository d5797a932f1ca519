package rl

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

func randomPPO(seed uint64, n, T int) PPOInputs {
	r := rng.New(seed)
	in := PPOInputs{
		Scores: make([]float64, n), HasEOS: make([]bool, n),
		Logp: zeros(n, T), OldLogp: zeros(n, T), RefLogp: zeros(n, T), Values: zeros(n, T), OldValues: zeros(n, T),
		ResponseMask: zeros(n, T), LossMask: zeros(n, T), Entropy: zeros(n, T),
	}
	for i := 0; i < n; i++ {
		in.Scores[i] = r.Normal()
		in.HasEOS[i] = r.Float64() < 0.5
		length := 1 + r.Intn(T)
		for t := 0; t < T; t++ {
			in.OldLogp[i][t] = -0.1 - 2*r.Float64()
			in.Logp[i][t] = in.OldLogp[i][t] + 0.3*r.Normal()
			in.RefLogp[i][t] = in.OldLogp[i][t] + 0.3*r.Normal()
			in.OldValues[i][t] = r.Normal()
			in.Values[i][t] = in.OldValues[i][t] + 0.4*r.Normal()
			in.Entropy[i][t] = 2 * r.Float64()
			if t < length {
				in.ResponseMask[i][t] = 1
				if r.Float64() < 0.7 {
					in.LossMask[i][t] = 1
				}
			}
		}
	}
	return in
}

func TestPPOGradientFiniteDifference(t *testing.T) {
	const h = 1e-6
	for _, whiten := range []bool{false, true} {
		for _, est := range []KLEstimator{KLK1, KLK2, KLK3} {
			cfg := DefaultPPOConfig()
			cfg.Gamma, cfg.Lam, cfg.KLEstimator, cfg.WhitenAdvantages = 0.97, 0.9, est, whiten
			cfg.MissingEOSPenalty, cfg.VFCoef, cfg.ClipRangeValue, cfg.EntropyCoef = 0.5, 0.3, 0.3, 0.02
			in := randomPPO(uint64(len(est))+11, 5, 6)
			res, err := PPOLoss(cfg, in)
			if err != nil {
				t.Fatal(err)
			}
			loss := func(edit func(*PPOInputs)) float64 {
				x := in
				x.Logp, x.Values, x.Entropy = cloneM(in.Logp), cloneM(in.Values), cloneM(in.Entropy)
				edit(&x)
				r, err := PPOLoss(cfg, x)
				if err != nil {
					t.Fatal(err)
				}
				return r.Loss
			}
			checked := 0
			for i := range in.Logp {
				for tt := range in.Logp[i] {
					if !nearKink(in.Logp[i][tt], in.OldLogp[i][tt], 0.8, 1.2, h) {
						fd := (loss(func(x *PPOInputs) { x.Logp[i][tt] += h }) - loss(func(x *PPOInputs) { x.Logp[i][tt] -= h })) / (2 * h)
						if math.Abs(fd-res.GradLogp[i][tt]) > 1e-7 {
							t.Errorf("whiten=%v %s grad_logp[%d][%d] = %.10g, finite difference %.10g", whiten, est, i, tt, res.GradLogp[i][tt], fd)
						}
						checked++
					}
					v, vo := in.Values[i][tt], in.OldValues[i][tt]
					if math.Abs(v-(vo-0.3)) > 1e-5 && math.Abs(v-(vo+0.3)) > 1e-5 {
						fd := (loss(func(x *PPOInputs) { x.Values[i][tt] += h }) - loss(func(x *PPOInputs) { x.Values[i][tt] -= h })) / (2 * h)
						if math.Abs(fd-res.GradValues[i][tt]) > 1e-7 {
							t.Errorf("whiten=%v %s grad_values[%d][%d] = %.10g, finite difference %.10g", whiten, est, i, tt, res.GradValues[i][tt], fd)
						}
					}
					fd := (loss(func(x *PPOInputs) { x.Entropy[i][tt] += h }) - loss(func(x *PPOInputs) { x.Entropy[i][tt] -= h })) / (2 * h)
					if math.Abs(fd-res.GradEntropy[i][tt]) > 1e-7 {
						t.Errorf("grad_entropy[%d][%d] = %v, finite difference %v", i, tt, res.GradEntropy[i][tt], fd)
					}
				}
			}
			if checked < 15 {
				t.Fatalf("only %d tokens checked", checked)
			}
		}
	}
}

// GAE against the direct sum A_t = sum_k (gamma*lam)^k delta_{t+k}.
func TestGAEDirectSum(t *testing.T) {
	in := randomPPO(4, 4, 7)
	rewards := cloneM(in.OldValues) // any numbers
	gamma, lam := 0.9, 0.8
	adv, ret, err := GAE(rewards, in.OldValues, in.ResponseMask, gamma, lam)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rewards {
		L := 0
		for _, m := range in.ResponseMask[i] {
			L += int(m)
		}
		v := func(t int) float64 {
			if t >= L {
				return 0
			}
			return in.OldValues[i][t]
		}
		for tt := 0; tt < len(rewards[i]); tt++ {
			var want float64
			for k := tt; k < L; k++ {
				delta := rewards[i][k] + gamma*v(k+1) - v(k)
				want += math.Pow(gamma*lam, float64(k-tt)) * delta
			}
			if math.Abs(adv[i][tt]-want) > 1e-12 {
				t.Errorf("adv[%d][%d] = %v, want %v", i, tt, adv[i][tt], want)
			}
			wantRet := 0.0
			if tt < L {
				wantRet = want + v(tt)
			}
			if math.Abs(ret[i][tt]-wantRet) > 1e-12 {
				t.Errorf("ret[%d][%d] = %v, want %v", i, tt, ret[i][tt], wantRet)
			}
		}
	}
}

func TestWhitenAndExplainedVariance(t *testing.T) {
	in := randomPPO(8, 6, 5)
	w := Whiten(in.OldValues, in.ResponseMask)
	m, v, n := maskedMeanVar(w, in.ResponseMask)
	if n < 2 || math.Abs(m) > 1e-12 || math.Abs(v-1) > 1e-6 {
		t.Errorf("whitened mean %v var %v (n %d)", m, v, n)
	}
	// With gamma = lam = 1 the returns do not depend on the values; a critic equal to the
	// returns explains all their variance.
	cfg := DefaultPPOConfig()
	cfg.Gamma, cfg.Lam = 1, 1
	first, err := PPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	in.OldValues = cloneM(first.Returns)
	second, err := PPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(second.Diagnostics.ExplainedVariance-1) > 1e-12 {
		t.Errorf("explained variance %v with a perfect critic, want 1", second.Diagnostics.ExplainedVariance)
	}
	if first.Diagnostics.ExplainedVariance >= 1 {
		t.Errorf("explained variance %v with a random critic", first.Diagnostics.ExplainedVariance)
	}
}

func TestPPOInputErrors(t *testing.T) {
	cfg := DefaultPPOConfig()
	in := randomPPO(2, 3, 4)
	in.HasEOS = in.HasEOS[:2]
	if _, err := PPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "has_eos") {
		t.Errorf("err %v", err)
	}
	in = randomPPO(2, 3, 4)
	in.ResponseMask[0] = []float64{1, 0, 1, 0}
	in.LossMask[0] = []float64{0, 0, 0, 0}
	if _, err := PPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "gap") {
		t.Errorf("err %v", err)
	}
	in = randomPPO(2, 3, 4)
	in.ResponseMask[1], in.LossMask[1] = make([]float64, 4), make([]float64, 4)
	if _, err := PPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "row 1: no response tokens") {
		t.Errorf("err %v", err)
	}
	in = randomPPO(2, 3, 4)
	in.OldValues[2][3] = math.Inf(1)
	if _, err := PPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "old_values[2][3]") {
		t.Errorf("err %v", err)
	}
	bad := []struct {
		edit func(*PPOConfig)
		want string
	}{
		{func(c *PPOConfig) { c.Gamma = 1.5 }, "gamma"},
		{func(c *PPOConfig) { c.Lam = -1 }, "lam"},
		{func(c *PPOConfig) { c.ClipRange = 0 }, "cliprange"},
		{func(c *PPOConfig) { c.ClipRangeValue = 0 }, "cliprange_value"},
		{func(c *PPOConfig) { c.VFCoef = -1 }, "vf_coef"},
		{func(c *PPOConfig) { c.KLCoef = -1 }, "kl_coef"},
		{func(c *PPOConfig) { c.KLEstimator = "" }, "kl estimator"},
		{func(c *PPOConfig) { c.MissingEOSPenalty = -1 }, "missing_eos_penalty"},
		{func(c *PPOConfig) { c.EntropyCoef = math.NaN() }, "entropy_coef"},
	}
	for _, b := range bad {
		c := DefaultPPOConfig()
		b.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("err %v, want it to name %q", err, b.want)
		}
	}
}

func TestKLControllers(t *testing.T) {
	a, err := NewAdaptiveKL(0.1, 6, 10000)
	if err != nil {
		t.Fatal(err)
	}
	a.Update(12, 256) // error clipped to +0.2
	if want := 0.1 * (1 + 0.2*256/10000.0); math.Abs(a.Value()-want) > 1e-15 {
		t.Errorf("coef %v, want %v", a.Value(), want)
	}
	c := a.Value()
	a.Update(5.4, 100) // error -0.1
	if want := c * (1 - 0.1*100/10000.0); math.Abs(a.Value()-want) > 1e-15 {
		t.Errorf("coef %v, want %v", a.Value(), want)
	}
	f := &FixedKL{Coef: 0.2}
	f.Update(100, 10)
	if f.Value() != 0.2 {
		t.Errorf("fixed controller moved to %v", f.Value())
	}
	for _, args := range [][3]float64{{-1, 1, 1}, {0.1, 0, 1}, {0.1, 1, 0}} {
		if _, err := NewAdaptiveKL(args[0], args[1], args[2]); err == nil {
			t.Errorf("NewAdaptiveKL%v accepted", args)
		}
	}
}

func TestKLControlConfig(t *testing.T) {
	ctl, err := KLControlConfig{Kind: "adaptive", InitCoef: 0.2, Target: 6, Horizon: 10000}.New()
	if err != nil {
		t.Fatal(err)
	}
	ctl.Update(0, 1000) // KL far below target: error clipped to -0.2
	if want := 0.2 * (1 - 0.2*1000/10000.0); math.Abs(ctl.Value()-want) > 1e-15 {
		t.Errorf("coef %v, want %v", ctl.Value(), want)
	}
	if ctl, err := (KLControlConfig{Kind: "fixed", InitCoef: 0.3}).New(); err != nil || ctl.Value() != 0.3 {
		t.Errorf("fixed: %v %v", ctl, err)
	}
	for _, c := range []struct {
		cfg  KLControlConfig
		want string
	}{
		{KLControlConfig{Kind: "pid"}, "kl_control"},
		{KLControlConfig{Kind: "fixed", InitCoef: -1}, "kl_coef"},
		{KLControlConfig{Kind: "adaptive", InitCoef: 0.1, Horizon: 1}, "kl_target"},
		{KLControlConfig{Kind: "adaptive", InitCoef: 0.1, Target: 1}, "kl_horizon"},
	} {
		if _, err := c.cfg.New(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.cfg, err, c.want)
		}
	}
}
