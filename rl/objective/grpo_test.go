package objective

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// randomGRPO builds a batch with varied lengths, forced tokens and a padded row.
func randomGRPO(seed uint64, n, T int) GRPOInputs {
	r := rng.New(seed)
	in := GRPOInputs{
		Rewards: make([]float64, n), Logp: Zeros(n, T), OldLogp: Zeros(n, T), RefLogp: Zeros(n, T),
		ResponseMask: Zeros(n, T), LossMask: Zeros(n, T), Entropy: Zeros(n, T),
	}
	for i := 0; i < n; i++ {
		in.Rewards[i] = r.Normal()
		length := 1 + r.Intn(T)
		if i == 1 {
			length = 0 // a row with no response tokens
		}
		for t := 0; t < T; t++ {
			in.OldLogp[i][t] = -0.1 - 2*r.Float64()
			in.Logp[i][t] = in.OldLogp[i][t] + 0.3*r.Normal()
			in.RefLogp[i][t] = in.OldLogp[i][t] + 0.3*r.Normal()
			in.Entropy[i][t] = 3 * r.Float64()
			if t < length {
				in.ResponseMask[i][t] = 1
				if r.Float64() < 0.8 {
					in.LossMask[i][t] = 1
				}
			}
		}
	}
	return in
}

func cloneM(m [][]float64) [][]float64 {
	out := Zeros(len(m), cols(m))
	for i := range m {
		copy(out[i], m[i])
	}
	return out
}

// nearKink reports whether a token's ratio is so close to a clip boundary that a central
// difference would straddle the kink.
func nearKink(logp, old, lo, hi, h float64) bool {
	r := math.Exp(logp - old)
	return math.Abs(r-lo) < 3*h*r || math.Abs(r-hi) < 3*h*r
}

func TestGRPOGradientFiniteDifference(t *testing.T) {
	const h = 1e-6
	for _, lt := range []LossType{LossGRPO, LossBNPO, LossDrGRPO, LossDAPO} {
		for _, sc := range []ScaleRewards{ScaleGroup, ScaleBatch, ScaleNone} {
			for _, est := range []KLEstimator{KLK1, KLK2, KLK3} {
				cfg := DefaultGRPOConfig()
				cfg.GroupSize, cfg.LossType, cfg.ScaleRewards, cfg.KLEstimator = 3, lt, sc, est
				cfg.Beta, cfg.EpsilonLow, cfg.EpsilonHigh, cfg.EntropyCoef = 0.07, 0.2, 0.28, 0.01
				cfg.MaxCompletionLength = 9
				in := randomGRPO(uint64(len(lt))*31+uint64(len(sc))*7+uint64(len(est)), 6, 7)
				res, err := GRPOLoss(cfg, in)
				if err != nil {
					t.Fatal(err)
				}
				if res.Action != Proceed {
					t.Fatalf("%s/%s: %s", lt, sc, res.Reason)
				}
				checked := 0
				for i := range in.Logp {
					for tt := range in.Logp[i] {
						if nearKink(in.Logp[i][tt], in.OldLogp[i][tt], 0.8, 1.28, h) {
							continue
						}
						f := func(dl, dh float64) float64 {
							x := in
							x.Logp = cloneM(in.Logp)
							x.Entropy = cloneM(in.Entropy)
							x.Logp[i][tt] += dl
							x.Entropy[i][tt] += dh
							r, err := GRPOLoss(cfg, x)
							if err != nil {
								t.Fatal(err)
							}
							return r.Loss
						}
						fd := (f(h, 0) - f(-h, 0)) / (2 * h)
						if math.Abs(fd-res.GradLogp[i][tt]) > 1e-7 {
							t.Errorf("%s/%s/%s grad_logp[%d][%d] = %.10g, finite difference %.10g", lt, sc, est, i, tt, res.GradLogp[i][tt], fd)
						}
						fdh := (f(0, h) - f(0, -h)) / (2 * h)
						if math.Abs(fdh-res.GradEntropy[i][tt]) > 1e-7 {
							t.Errorf("%s/%s/%s grad_entropy[%d][%d] = %.10g, finite difference %.10g", lt, sc, est, i, tt, res.GradEntropy[i][tt], fdh)
						}
						checked++
					}
				}
				if checked < 30 {
					t.Fatalf("only %d tokens checked", checked)
				}
				for tt := range res.GradLogp[1] {
					if res.GradLogp[1][tt] != 0 {
						t.Errorf("%s: empty row 1 has gradient %v at %d", lt, res.GradLogp[1][tt], tt)
					}
				}
			}
		}
	}
}

func TestGRPOFirstIterationRatioIsOne(t *testing.T) {
	in := randomGRPO(5, 8, 6)
	in.Logp = cloneM(in.OldLogp)
	cfg := DefaultGRPOConfig()
	cfg.GroupSize, cfg.Beta, cfg.LossType = 4, 0, LossBNPO
	res, err := GRPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Diagnostics
	if d.RatioMean != 1 || d.ClippedFraction != 0 || d.ActiveFraction != 1 || d.RatioP10 != 1 || d.RatioP90 != 1 {
		t.Errorf("ratio stats at the first iteration: %+v", d)
	}
	// With ratio 1 the bnpo gradient is -A / count on every loss token.
	count := float64(maskCount(in.LossMask))
	for i := range in.Logp {
		for tt := range in.Logp[i] {
			want := 0.0
			if in.LossMask[i][tt] != 0 {
				want = -res.Advantages[i] / count
			}
			if math.Abs(res.GradLogp[i][tt]-want) > 1e-15 {
				t.Fatalf("grad[%d][%d] = %v, want %v", i, tt, res.GradLogp[i][tt], want)
			}
		}
	}
	// Policy-gradient loss at ratio 1 is -mean(A) over loss tokens.
	var want float64
	for i := range in.LossMask {
		for _, m := range in.LossMask[i] {
			want -= m * res.Advantages[i] / count
		}
	}
	if math.Abs(res.Loss-want) > 1e-12 {
		t.Errorf("loss %v, want %v", res.Loss, want)
	}
}

func TestGroupAdvantages(t *testing.T) {
	adv, frac, err := GroupAdvantages([]float64{1, 1, 1, 0, 2, 4}, 3, ScaleGroup, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	// Group 2: mean 2, Bessel std 2.
	want := []float64{0, 0, 0, -2 / 2.0001, 0, 2 / 2.0001}
	for i := range want {
		if math.Abs(adv[i]-want[i]) > 1e-12 {
			t.Errorf("adv[%d] = %v, want %v", i, adv[i], want[i])
		}
	}
	if frac != 0.5 {
		t.Errorf("frac_reward_zero_std %v, want 0.5", frac)
	}
	if _, _, err := GroupAdvantages([]float64{1, 2, 3}, 2, ScaleGroup, 1e-4); err == nil || !strings.Contains(err.Error(), "group_size") {
		t.Errorf("ragged groups: err %v", err)
	}
	if _, _, err := GroupAdvantages([]float64{1, math.NaN()}, 2, ScaleGroup, 1e-4); err == nil || !strings.Contains(err.Error(), "rewards[1]") {
		t.Errorf("NaN reward: err %v", err)
	}
}

func TestGRPORatioBoundsAndSkips(t *testing.T) {
	in := GRPOInputs{
		Rewards:      []float64{0, 1},
		Logp:         [][]float64{{-1, -1 + math.Log(5), -1}, {-1, -1, -1 + math.Log(0.1)}},
		OldLogp:      [][]float64{{-1, -1, -1}, {-1, -1, -1}},
		ResponseMask: [][]float64{{1, 1, 1}, {1, 1, 1}},
		LossMask:     [][]float64{{1, 1, 0}, {1, 1, 1}},
	}
	cfg := DefaultGRPOConfig()
	cfg.GroupSize, cfg.Beta, cfg.MinTokenRatio, cfg.MaxTokenRatio = 2, 0, 0.25, 4
	res, err := GRPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Diagnostics.RatioMaskedTokens != 2 || res.Diagnostics.LearnableTokens != 3 {
		t.Errorf("ratio-masked %v learnable %v, want 2 and 3", res.Diagnostics.RatioMaskedTokens, res.Diagnostics.LearnableTokens)
	}
	if res.GradLogp[0][1] != 0 || res.GradLogp[1][2] != 0 || res.EffectiveLossMask[0][1] != 0 {
		t.Errorf("out-of-bounds tokens still carry gradient: %v", res.GradLogp)
	}
	cfg.MinLearnableTokens = 4
	res, _ = GRPOLoss(cfg, in)
	if res.Action != Skip || !strings.Contains(res.Reason, "min_learnable_tokens") {
		t.Errorf("action %s reason %q", res.Action, res.Reason)
	}
	for _, row := range res.GradLogp {
		for _, g := range row {
			if g != 0 {
				t.Fatal("skipped step returned a non-zero gradient")
			}
		}
	}
	cfg.MinLearnableTokens, cfg.MinLearnableFraction = 0, 0.6
	res, _ = GRPOLoss(cfg, in)
	if res.Action != Skip || !strings.Contains(res.Reason, "min_learnable_fraction") {
		t.Errorf("action %s reason %q", res.Action, res.Reason)
	}
	// All forced: nothing to learn.
	cfg.MinLearnableFraction = 0
	in.LossMask = Zeros(2, 3)
	res, _ = GRPOLoss(cfg, in)
	if res.Action != Skip || !strings.Contains(res.Reason, "no learnable tokens") || res.Loss != 0 {
		t.Errorf("all forced: action %s reason %q loss %v", res.Action, res.Reason, res.Loss)
	}
}

func TestGRPOKLHardCap(t *testing.T) {
	in := randomGRPO(9, 4, 5)
	cfg := DefaultGRPOConfig()
	cfg.GroupSize = 2
	res, err := GRPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	kl := res.Diagnostics.KLMean
	if !(kl > 0) {
		t.Fatalf("k3 mean %v, want > 0", kl)
	}
	cfg.KLHardCap, cfg.KLCapAction = kl*0.9, Stop
	res, _ = GRPOLoss(cfg, in)
	if res.Action != Stop || !strings.Contains(res.Reason, "kl_hard_cap") {
		t.Errorf("action %s reason %q", res.Action, res.Reason)
	}
	cfg.KLHardCap = kl * 1.1
	res, _ = GRPOLoss(cfg, in)
	if res.Action != Proceed {
		t.Errorf("under the cap: action %s", res.Action)
	}
	if d := res.Diagnostics; d.KLMean != d.KLK3Mean || !(d.KLK2Mean > 0) {
		t.Errorf("kl_mean %v, k3 mean %v, k2 mean %v", d.KLMean, d.KLK3Mean, d.KLK2Mean)
	}
	// KL share: kl_loss / (|pg| + |kl|).
	d := res.Diagnostics
	if want := math.Abs(d.KLLoss) / (math.Abs(d.PGLoss) + math.Abs(d.KLLoss)); math.Abs(d.KLShare-want) > 1e-15 || d.KLShare <= 0 {
		t.Errorf("kl_share %v, want %v", d.KLShare, want)
	}
	if math.Abs(d.PGLoss+d.KLLoss+d.EntropyLoss-res.Loss) > 1e-15 {
		t.Errorf("loss parts %v+%v+%v != %v", d.PGLoss, d.KLLoss, d.EntropyLoss, res.Loss)
	}
}

func TestGRPOInputErrors(t *testing.T) {
	good := randomGRPO(3, 4, 5)
	cfg := DefaultGRPOConfig()
	cfg.GroupSize = 2
	cases := []struct {
		name string
		edit func(*GRPOInputs, *GRPOConfig)
		want string
	}{
		{"short row", func(in *GRPOInputs, _ *GRPOConfig) { in.OldLogp[2] = in.OldLogp[2][:3] }, "old_logp: row 2"},
		{"nan", func(in *GRPOInputs, _ *GRPOConfig) { in.Logp[1][1] = math.NaN() }, "logp[1][1]"},
		{"mask value", func(in *GRPOInputs, _ *GRPOConfig) { in.ResponseMask[0][0] = 0.5 }, "response_mask[0][0]"},
		{"loss outside response", func(in *GRPOInputs, _ *GRPOConfig) { in.ResponseMask[3] = make([]float64, 5); in.LossMask[3][0] = 1 }, "loss_mask[3][0]"},
		{"missing ref", func(in *GRPOInputs, _ *GRPOConfig) { in.RefLogp = nil }, "ref_logp"},
		{"group size", func(_ *GRPOInputs, c *GRPOConfig) { c.GroupSize = 3 }, "group_size"},
		{"missing entropy", func(in *GRPOInputs, c *GRPOConfig) { in.Entropy = nil; c.EntropyCoef = 0.1 }, "entropy"},
	}
	for _, c := range cases {
		in := good
		in.Logp, in.OldLogp, in.ResponseMask, in.LossMask = cloneM(good.Logp), cloneM(good.OldLogp), cloneM(good.ResponseMask), cloneM(good.LossMask)
		cf := cfg
		c.edit(&in, &cf)
		if _, err := GRPOLoss(cf, in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestGRPOConfigValidate(t *testing.T) {
	if err := DefaultGRPOConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		edit func(*GRPOConfig)
		want string
	}{
		{func(c *GRPOConfig) { c.GroupSize = 0 }, "group_size"},
		{func(c *GRPOConfig) { c.LossType = "mean" }, "loss_type"},
		{func(c *GRPOConfig) { c.ScaleRewards = "x" }, "scale_rewards"},
		{func(c *GRPOConfig) { c.AdvantageEps = 0 }, "advantage_eps"},
		{func(c *GRPOConfig) { c.EpsilonLow = 1 }, "epsilon_low"},
		{func(c *GRPOConfig) { c.EpsilonHigh = -1 }, "epsilon_high"},
		{func(c *GRPOConfig) { c.Beta = math.NaN() }, "beta"},
		{func(c *GRPOConfig) { c.KLEstimator = "k4" }, "kl estimator"},
		{func(c *GRPOConfig) { c.MaxCompletionLength = 0 }, "max_completion_length"},
		{func(c *GRPOConfig) { c.EntropyCoef = math.Inf(1) }, "entropy_coef"},
		{func(c *GRPOConfig) { c.MinTokenRatio = -1 }, "min_token_ratio"},
		{func(c *GRPOConfig) { c.MinTokenRatio, c.MaxTokenRatio = 2, 1 }, "max_token_ratio"},
		{func(c *GRPOConfig) { c.MinLearnableTokens = -1 }, "min_learnable_tokens"},
		{func(c *GRPOConfig) { c.MinLearnableFraction = 2 }, "min_learnable_fraction"},
		{func(c *GRPOConfig) { c.KLHardCap = -1 }, "kl_hard_cap"},
		{func(c *GRPOConfig) { c.KLCapAction = Proceed }, "kl_cap_action"},
	}
	for _, c := range cases {
		cfg := DefaultGRPOConfig()
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want it to name %q", err, c.want)
		}
	}
}
