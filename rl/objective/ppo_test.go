package objective

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
		Logp: Zeros(n, T), OldLogp: Zeros(n, T), RefLogp: Zeros(n, T), Values: Zeros(n, T), OldValues: Zeros(n, T),
		ResponseMask: Zeros(n, T), LossMask: Zeros(n, T), Entropy: Zeros(n, T),
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

// subsetPPO keeps the listed rows of in.
func subsetPPO(in PPOInputs, rows []int) PPOInputs {
	pick := func(m [][]float64) [][]float64 {
		out := make([][]float64, len(rows))
		for k, i := range rows {
			out[k] = m[i]
		}
		return out
	}
	out := PPOInputs{Logp: pick(in.Logp), OldLogp: pick(in.OldLogp), RefLogp: pick(in.RefLogp), Values: pick(in.Values),
		OldValues: pick(in.OldValues), ResponseMask: pick(in.ResponseMask), LossMask: pick(in.LossMask), Entropy: pick(in.Entropy)}
	for _, i := range rows {
		out.Scores = append(out.Scores, in.Scores[i])
		out.HasEOS = append(out.HasEOS, in.HasEOS[i])
	}
	return out
}

// A mini-batch loss takes its advantages from the whole batch and its means over its own rows.
func TestPPOLossMiniBatchRows(t *testing.T) {
	cfg := DefaultPPOConfig()
	cfg.EntropyCoef, cfg.KLCoef, cfg.MissingEOSPenalty = 0.01, 0.1, 0.5
	in := randomPPO(7, 9, 6)
	rows := []int{1, 4, 5, 8}
	full, err := PPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	// Rows outside the mini-batch must not be read: fill them with a value that would show.
	mb := in
	mb.Logp, mb.Values, mb.Entropy = Zeros(9, 6), Zeros(9, 6), Zeros(9, 6)
	for i := range mb.Logp {
		for j := range mb.Logp[i] {
			mb.Logp[i][j], mb.Values[i][j], mb.Entropy[i][j] = 50, 50, 50
		}
	}
	for _, i := range rows {
		copy(mb.Logp[i], in.Logp[i])
		copy(mb.Values[i], in.Values[i])
		copy(mb.Entropy[i], in.Entropy[i])
	}
	mb.Rows = rows
	part, err := PPOLoss(cfg, mb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range full.Advantages {
		for j := range full.Advantages[i] {
			if part.Advantages[i][j] != full.Advantages[i][j] || part.Returns[i][j] != full.Returns[i][j] {
				t.Fatalf("advantage or return [%d][%d] depends on the mini-batch", i, j)
			}
		}
	}
	// The policy loss by hand over the mini-batch's loss tokens, with the whole batch's advantages.
	var pg, n float64
	inRows := map[int]bool{}
	for _, i := range rows {
		inRows[i] = true
		for j, w := range in.LossMask[i] {
			if w != 0 {
				ratio := math.Exp(in.Logp[i][j] - in.OldLogp[i][j])
				A := full.Advantages[i][j]
				pg += math.Max(-A*ratio, -A*math.Min(math.Max(ratio, 1-cfg.ClipRange), 1+cfg.ClipRange))
				n++
			}
		}
	}
	if got, want := part.PGLoss, pg/n; math.Abs(got-want) > 1e-12 {
		t.Fatalf("mini-batch pg loss %v, want %v", got, want)
	}
	for i := range in.Logp {
		for j := range in.Logp[i] {
			if !inRows[i] && (part.GradLogp[i][j] != 0 || part.GradValues[i][j] != 0 || part.GradEntropy[i][j] != 0) {
				t.Fatalf("gradient at row %d outside the mini-batch", i)
			}
		}
	}
	// Without whitening the advantages are per row, so a mini-batch equals a batch of its rows.
	cfg.WhitenAdvantages = false
	part, err = PPOLoss(cfg, mb)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := PPOLoss(cfg, subsetPPO(in, rows))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(part.PGLoss-alone.PGLoss) > 1e-12 || math.Abs(part.VFLoss-alone.VFLoss) > 1e-12 || math.Abs(part.Loss-alone.Loss) > 1e-12 {
		t.Fatalf("losses %v/%v/%v as a mini-batch, %v/%v/%v alone", part.PGLoss, part.VFLoss, part.Loss, alone.PGLoss, alone.VFLoss, alone.Loss)
	}
	for k, i := range rows {
		for j := range in.Logp[i] {
			if math.Abs(part.GradLogp[i][j]-alone.GradLogp[k][j]) > 1e-12 || math.Abs(part.GradValues[i][j]-alone.GradValues[k][j]) > 1e-12 {
				t.Fatalf("gradient [%d][%d] as a mini-batch differs from the batch of its rows", i, j)
			}
		}
	}
	if part.Diagnostics.ClipFrac != alone.Diagnostics.ClipFrac || part.Diagnostics.VFClipFrac != alone.Diagnostics.VFClipFrac {
		t.Fatalf("clip fractions %+v as a mini-batch, %+v alone", part.Diagnostics, alone.Diagnostics)
	}
	for _, bad := range []struct {
		rows []int
		want string
	}{{[]int{}, "empty"}, {[]int{1, 9}, "index 9 outside"}, {[]int{2, 2}, "row 2 listed twice"}, {[]int{-1}, "index -1"}} {
		mb.Rows = bad.rows
		if _, err := PPOLoss(cfg, mb); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("rows %v: err %v, want %q", bad.rows, err, bad.want)
		}
	}
}
