package objective

import (
	"fmt"
	"math"
)

// PPOConfig holds every PPO option. Each field becomes a command-line flag.
type PPOConfig struct {
	// Gamma is the discount per token; in [0, 1].
	Gamma float64 `json:"gamma"`
	// Lam is GAE's lambda; in [0, 1].
	Lam float64 `json:"lam"`
	// ClipRange clips the policy ratio to [1-ClipRange, 1+ClipRange]; in (0, 1).
	ClipRange float64 `json:"cliprange"`
	// ClipRangeValue clips new values to old_value +- ClipRangeValue; > 0.
	ClipRangeValue float64 `json:"cliprange_value"`
	// VFCoef weighs the value loss in the total loss; >= 0.
	VFCoef float64 `json:"vf_coef"`
	// KLCoef is the per-token KL penalty coefficient in the rewards (the controller's value); >= 0.
	KLCoef float64 `json:"kl_coef"`
	// KLEstimator computes the reward penalty's KL from old vs reference log-probs (k1, k2, k3).
	KLEstimator KLEstimator `json:"kl_estimator"`
	// MissingEOSPenalty is subtracted from the score of rows that hit the length limit
	// without an EOS; >= 0.
	MissingEOSPenalty float64 `json:"missing_eos_penalty"`
	// WhitenAdvantages normalises advantages over the response mask (Bessel variance, eps 1e-8).
	WhitenAdvantages bool `json:"whiten_advantages"`
	// EntropyCoef subtracts EntropyCoef times the loss-mask mean entropy from the loss; 0 disables.
	EntropyCoef float64 `json:"entropy_coef"`
}

// DefaultPPOConfig returns TRL's PPO defaults.
func DefaultPPOConfig() PPOConfig {
	return PPOConfig{
		Gamma: 1, Lam: 0.95, ClipRange: 0.2, ClipRangeValue: 0.2, VFCoef: 0.1, KLCoef: 0.05,
		KLEstimator: KLK1, WhitenAdvantages: true,
	}
}

// Validate names the first bad field.
func (c PPOConfig) Validate() error {
	if !(c.Gamma >= 0 && c.Gamma <= 1) {
		return fmt.Errorf("gamma %v: want a value in [0, 1]", c.Gamma)
	}
	if !(c.Lam >= 0 && c.Lam <= 1) {
		return fmt.Errorf("lam %v: want a value in [0, 1]", c.Lam)
	}
	if !(c.ClipRange > 0 && c.ClipRange < 1) {
		return fmt.Errorf("cliprange %v: want a value in (0, 1)", c.ClipRange)
	}
	if !(c.ClipRangeValue > 0) || math.IsInf(c.ClipRangeValue, 0) {
		return fmt.Errorf("cliprange_value %v: want a finite value > 0", c.ClipRangeValue)
	}
	if !(c.VFCoef >= 0) || math.IsInf(c.VFCoef, 0) {
		return fmt.Errorf("vf_coef %v: want a finite value >= 0", c.VFCoef)
	}
	if !(c.KLCoef >= 0) || math.IsInf(c.KLCoef, 0) {
		return fmt.Errorf("kl_coef %v: want a finite value >= 0", c.KLCoef)
	}
	if err := c.KLEstimator.Validate(); err != nil {
		return err
	}
	if !(c.MissingEOSPenalty >= 0) || math.IsInf(c.MissingEOSPenalty, 0) {
		return fmt.Errorf("missing_eos_penalty %v: want a finite value >= 0", c.MissingEOSPenalty)
	}
	if math.IsNaN(c.EntropyCoef) || math.IsInf(c.EntropyCoef, 0) {
		return fmt.Errorf("entropy_coef %v: want a finite value", c.EntropyCoef)
	}
	return nil
}

// PPOInputs are one step's host-side arrays, N rows by T completion positions.
type PPOInputs struct {
	Scores    []float64   // N sequence scores from the reward
	HasEOS    []bool      // N: whether the row ended with an EOS (false: truncated)
	Logp      [][]float64 // current policy log-probs
	OldLogp   [][]float64 // rollout policy log-probs
	RefLogp   [][]float64 // reference log-probs
	Values    [][]float64 // current value-head outputs
	OldValues [][]float64 // rollout value-head outputs
	// ResponseMask covers the response (GAE and the value loss); LossMask the learnable tokens
	// (the policy loss).
	ResponseMask [][]float64
	LossMask     [][]float64
	Entropy      [][]float64 // per-token entropy; needed when EntropyCoef != 0
	// TurnRewards, when set, makes each row a multi-turn episode: the rewards of its turns,
	// each on its turn's last sampled token (Scores is then each row's total, for the
	// diagnostics). ResponseMask may then have gaps (the environment's tokens), which GAE
	// passes over (GAEOverTurns), and a row without response tokens (an episode not trained)
	// must carry no reward.
	TurnRewards [][]float64
	// Rows, when set, is a mini-batch: the policy and value losses, their gradients and the
	// loss diagnostics cover only these rows (Logp, Values and Entropy are read only there),
	// while rewards, GAE, whitening and the batch diagnostics still use every row, so
	// advantages do not depend on how the batch is split.
	Rows []int
}

// PPODiagnostics are the per-step PPO metrics, logged under their JSON names.
type PPODiagnostics struct {
	ClipFrac          float64 `json:"clipfrac"`            // loss-mask fraction where the clipped branch is taken
	VFClipFrac        float64 `json:"vf_clipfrac"`         // response fraction where the clipped value loss is larger
	ApproxKL          float64 `json:"approx_kl"`           // 0.5 * mean (logp - old_logp)^2 over the loss mask
	KLRefMean         float64 `json:"kl_ref_mean"`         // per-token mean of the reward KL (old vs ref) over the response
	KLRefRowSumMean   float64 `json:"kl_ref_row_sum_mean"` // mean over rows of the summed reward KL (TRL's objective/kl)
	ExplainedVariance float64 `json:"explained_variance"`  // 1 - Var(R - V_old) / Var(R) over the response
	ValueMean         float64 `json:"value_mean"`
	ReturnMean        float64 `json:"return_mean"`
	AdvantageMean     float64 `json:"advantage_mean"` // raw advantages over the response
	AdvantageStd      float64 `json:"advantage_std"`
	RatioMean         float64 `json:"ratio_mean"`
	ScoreMean         float64 `json:"score_mean"`
	NoEOSFraction     float64 `json:"no_eos_fraction"`
	EntropyMean       float64 `json:"entropy_mean"`
	LossTokenFraction float64 `json:"loss_token_fraction"`
	PGLoss            float64 `json:"pg_loss"`
	VFLoss            float64 `json:"vf_loss"`
	EntropyLoss       float64 `json:"entropy_loss"`
}

// Map returns the diagnostics keyed by their JSON names.
func (d PPODiagnostics) Map() map[string]float64 { return structMap(d) }

// PPOResult is one PPO step's intermediate arrays, losses, gradients and diagnostics.
type PPOResult struct {
	TokenRewards  [][]float64
	AdvantagesRaw [][]float64 // GAE before whitening
	Advantages    [][]float64 // after whitening when enabled
	Returns       [][]float64 // raw advantages + old values
	PGLoss        float64
	VFLoss        float64
	Loss          float64     // PGLoss + VFCoef*VFLoss - EntropyCoef*entropy
	GradLogp      [][]float64 // d Loss / d logp
	GradValues    [][]float64 // d Loss / d values
	GradEntropy   [][]float64 // d Loss / d entropy; nil when EntropyCoef is 0
	Diagnostics   PPODiagnostics
}

// GAE computes generalised advantage estimates over a right-padded response mask:
//
//	delta_t = r_t + gamma * V_{t+1} - V_t,   A_t = delta_t + gamma*lam*A_{t+1}
//
// with V and A taken as 0 past the last response token (terminal value 0), and returns
// R_t = A_t + V_t. Both are 0 off the mask.
func GAE(rewards, values, mask [][]float64, gamma, lam float64) (adv, ret [][]float64, err error) {
	n, T := len(rewards), cols(rewards)
	if err := checkMatrix("rewards", rewards, n, T); err != nil {
		return nil, nil, err
	}
	if err := checkMatrix("values", values, n, T); err != nil {
		return nil, nil, err
	}
	if err := checkMask("response_mask", mask, n, T); err != nil {
		return nil, nil, err
	}
	if !(gamma >= 0 && gamma <= 1) {
		return nil, nil, fmt.Errorf("gamma %v: want a value in [0, 1]", gamma)
	}
	if !(lam >= 0 && lam <= 1) {
		return nil, nil, fmt.Errorf("lam %v: want a value in [0, 1]", lam)
	}
	adv, ret = Zeros(n, T), Zeros(n, T)
	for i := 0; i < n; i++ {
		var next, last float64
		for t := T - 1; t >= 0; t-- {
			if mask[i][t] == 0 {
				next, last = 0, 0
				continue
			}
			delta := rewards[i][t] + gamma*next - values[i][t]
			last = delta + gamma*lam*last
			adv[i][t] = last
			ret[i][t] = last + values[i][t]
			next = values[i][t]
		}
	}
	return adv, ret, nil
}

// Whiten returns (x - mean) / sqrt(var + 1e-8) over the mask (Bessel variance), 0 off the mask.
func Whiten(x, mask [][]float64) [][]float64 {
	mean, v, _ := maskedMeanVar(x, mask)
	out := Zeros(len(x), cols(x))
	s := 1 / math.Sqrt(v+1e-8)
	for i := range x {
		for t := range x[i] {
			if mask[i][t] != 0 {
				out[i][t] = (x[i][t] - mean) * s
			}
		}
	}
	return out
}

// PPOLoss computes per-token rewards (-kl_coef*KL_t plus the score at the last response
// token), GAE advantages and returns, the clipped policy and value losses, their gradients
// with respect to logp and values, and diagnostics:
//
//	pg = mean over loss mask of max(-A*ratio, -A*clip(ratio, 1-c, 1+c))
//	vf = 0.5 * mean over response of max((v-R)^2, (clip(v, v_old-cv, v_old+cv)-R)^2)
//	loss = pg + vf_coef*vf - entropy_coef*mean over loss mask of H
//
// With in.Rows set, the means run over those rows only (a mini-batch).
func PPOLoss(cfg PPOConfig, in PPOInputs) (*PPOResult, error) {
	if err := checkPPOInputs(cfg, in); err != nil {
		return nil, err
	}
	inLoss, err := lossRows(in.Rows, len(in.Scores))
	if err != nil {
		return nil, err
	}
	r := &PPOResult{}
	if err := tokenRewards(cfg, in, r); err != nil {
		return nil, err
	}
	gae := GAE
	if in.TurnRewards != nil {
		gae = GAEOverTurns
	}
	if r.AdvantagesRaw, r.Returns, err = gae(r.TokenRewards, in.OldValues, in.ResponseMask, cfg.Gamma, cfg.Lam); err != nil {
		return nil, err
	}
	r.Advantages = r.AdvantagesRaw
	if cfg.WhitenAdvantages {
		r.Advantages = Whiten(r.AdvantagesRaw, in.ResponseMask)
	}
	sums := accumulatePPO(cfg, in, r, inLoss)
	r.Loss = r.PGLoss + cfg.VFCoef*r.VFLoss + r.Diagnostics.EntropyLoss
	ppoDiagnostics(&r.Diagnostics, in, r, sums)
	return r, nil
}

// checkPPOInputs names the first input whose shape does not fit the batch, or a response that
// is not one run from position 0.
func checkPPOInputs(cfg PPOConfig, in PPOInputs) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n := len(in.Scores)
	if n == 0 {
		return fmt.Errorf("scores: empty batch")
	}
	if err := checkVector("scores", in.Scores, n); err != nil {
		return err
	}
	if len(in.HasEOS) != n {
		return fmt.Errorf("has_eos: %d values, want %d", len(in.HasEOS), n)
	}
	T := cols(in.Logp)
	for _, f := range []struct {
		name string
		m    [][]float64
	}{{"logp", in.Logp}, {"old_logp", in.OldLogp}, {"ref_logp", in.RefLogp}, {"values", in.Values}, {"old_values", in.OldValues}} {
		if err := checkMatrix(f.name, f.m, n, T); err != nil {
			return err
		}
	}
	if err := checkMasks(in.ResponseMask, in.LossMask, n, T); err != nil {
		return err
	}
	if cfg.EntropyCoef != 0 || in.Entropy != nil {
		if err := checkMatrix("entropy", in.Entropy, n, T); err != nil {
			return err
		}
	}
	if in.TurnRewards != nil {
		return checkMatrix("turn_rewards", in.TurnRewards, n, T)
	}
	resp := in.ResponseMask
	for i := 0; i < n; i++ {
		for t := 1; t < T; t++ {
			if resp[i][t] != 0 && resp[i][t-1] == 0 {
				return fmt.Errorf("response_mask row %d: a gap at position %d; the response must be one run from position 0 (right padding only)", i, t)
			}
		}
	}
	return nil
}

// tokenRewards puts the KL penalty against the reference on every response token and the
// sequence's score (less the missing-EOS penalty) on its last.
func tokenRewards(cfg PPOConfig, in PPOInputs, r *PPOResult) error {
	n, T := len(in.Scores), cols(in.Logp)
	resp, d := in.ResponseMask, &r.Diagnostics
	r.TokenRewards, r.GradLogp, r.GradValues = Zeros(n, T), Zeros(n, T), Zeros(n, T)
	var klRowSum float64
	respN := 0
	for i := 0; i < n; i++ {
		last := -1
		for t := 0; t < T; t++ {
			if resp[i][t] == 0 {
				continue
			}
			last = t
			respN++
			kl, _ := cfg.KLEstimator.KL(in.OldLogp[i][t], in.RefLogp[i][t])
			klRowSum += kl
			r.TokenRewards[i][t] = -cfg.KLCoef * kl
		}
		score := in.Scores[i]
		if !in.HasEOS[i] {
			score -= cfg.MissingEOSPenalty
			d.NoEOSFraction += 1 / float64(n)
		}
		d.ScoreMean += in.Scores[i] / float64(n)
		if in.TurnRewards != nil {
			if err := addTurnRewards(in.TurnRewards[i], resp[i], r.TokenRewards[i], score-in.Scores[i], last); err != nil {
				return fmt.Errorf("turn_rewards row %d: %w", i, err)
			}
			continue
		}
		if last < 0 {
			return fmt.Errorf("response_mask row %d: no response tokens, so score %v has no token to go to", i, in.Scores[i])
		}
		r.TokenRewards[i][last] += score
	}
	d.KLRefRowSumMean = klRowSum / float64(n)
	if respN > 0 {
		d.KLRefMean = klRowSum / float64(respN)
	}
	return nil
}

// addTurnRewards adds an episode's turn rewards to its token rewards, and the missing-EOS
// penalty (penalty, <= 0) on its last response token. A reward off the response mask is an
// error: it would reach no trained token.
func addTurnRewards(turn, resp, dst []float64, penalty float64, last int) error {
	for t, x := range turn {
		if x != 0 && resp[t] == 0 {
			return fmt.Errorf("reward %v at position %d, which is not a response token", x, t)
		}
		dst[t] += x
	}
	if last >= 0 {
		dst[last] += penalty
	}
	return nil
}

// ppoSums are what accumulatePPO adds up over the loss rows for the diagnostics.
type ppoSums struct {
	lossN, lossRespN                           int // loss-mask and response tokens of the loss rows
	clipped, vfClipped, ratio, sqLogRatio, ent float64
}

// accumulatePPO adds the loss rows' clipped policy-gradient, value and entropy terms to the loss
// and writes their gradients with respect to the log-probs, the values (and the entropies).
func accumulatePPO(cfg PPOConfig, in PPOInputs, r *PPOResult, inLoss []bool) ppoSums {
	n, T := len(in.Scores), cols(in.Logp)
	resp, lm, d := in.ResponseMask, in.LossMask, &r.Diagnostics
	var s ppoSums
	for i := 0; i < n; i++ {
		if inLoss[i] {
			s.lossN += maskCount(lm[i : i+1])
			s.lossRespN += maskCount(resp[i : i+1])
		}
	}
	lossW := 1 / math.Max(float64(s.lossN), 1)
	respW := 1 / math.Max(float64(s.lossRespN), 1)
	lo, hi := 1-cfg.ClipRange, 1+cfg.ClipRange
	if cfg.EntropyCoef != 0 {
		r.GradEntropy = Zeros(n, T)
	}
	for i := 0; i < n; i++ {
		if !inLoss[i] {
			continue
		}
		for t := 0; t < T; t++ {
			if lm[i][t] != 0 {
				A := r.Advantages[i][t]
				lr := in.Logp[i][t] - in.OldLogp[i][t]
				ratio := math.Exp(lr)
				cr := math.Min(math.Max(ratio, lo), hi)
				l1, l2 := -A*ratio, -A*cr
				r.PGLoss += lossW * math.Max(l1, l2)
				if l2 > l1 {
					s.clipped++
				} else {
					r.GradLogp[i][t] = -lossW * A * ratio
				}
				s.ratio += ratio
				s.sqLogRatio += lr * lr
				if in.Entropy != nil {
					s.ent += in.Entropy[i][t]
				}
				if cfg.EntropyCoef != 0 {
					d.EntropyLoss -= lossW * cfg.EntropyCoef * in.Entropy[i][t]
					r.GradEntropy[i][t] = -lossW * cfg.EntropyCoef
				}
			}
			if resp[i][t] != 0 {
				r.GradValues[i][t] = valueTerm(cfg, r, &s, in.Values[i][t], in.OldValues[i][t], r.Returns[i][t], respW)
			}
		}
	}
	return s
}

// valueTerm adds one response token's clipped value loss to r.VFLoss and returns its gradient
// with respect to the value.
func valueTerm(cfg PPOConfig, r *PPOResult, s *ppoSums, v, vo, R, respW float64) float64 {
	vc := math.Min(math.Max(v, vo-cfg.ClipRangeValue), vo+cfg.ClipRangeValue)
	e1, e2 := (v-R)*(v-R), (vc-R)*(vc-R)
	r.VFLoss += 0.5 * respW * math.Max(e1, e2)
	var g float64
	if e2 > e1 {
		s.vfClipped++
		if v > vo-cfg.ClipRangeValue && v < vo+cfg.ClipRangeValue {
			g = vc - R
		}
	} else {
		g = v - R
	}
	return cfg.VFCoef * respW * g
}

// ppoDiagnostics fills the fractions, means and the value head's explained variance.
func ppoDiagnostics(d *PPODiagnostics, in PPOInputs, r *PPOResult, s ppoSums) {
	resp := in.ResponseMask
	d.PGLoss, d.VFLoss = r.PGLoss, r.VFLoss
	if s.lossN > 0 {
		d.ClipFrac = s.clipped / float64(s.lossN)
		d.ApproxKL = 0.5 * s.sqLogRatio / float64(s.lossN)
		d.RatioMean = s.ratio / float64(s.lossN)
		d.EntropyMean = s.ent / float64(s.lossN)
	} else {
		d.RatioMean = 1
	}
	if s.lossRespN > 0 {
		d.VFClipFrac = s.vfClipped / float64(s.lossRespN)
		d.LossTokenFraction = float64(s.lossN) / float64(s.lossRespN)
	}
	retMean, retVar, _ := maskedMeanVar(r.Returns, resp)
	d.ReturnMean = retMean
	d.ValueMean, _, _ = maskedMeanVar(in.OldValues, resp)
	am, av, _ := maskedMeanVar(r.AdvantagesRaw, resp)
	d.AdvantageMean, d.AdvantageStd = am, math.Sqrt(av)
	// Residual R - V_old equals the raw advantage; explained variance is 1 - Var(A)/Var(R).
	if retVar > 0 {
		d.ExplainedVariance = 1 - av/retVar
	}
}

// lossRows marks the rows a loss covers: all n when rows is nil, else exactly rows, which
// must be distinct indices in [0, n).
func lossRows(rows []int, n int) ([]bool, error) {
	in := make([]bool, n)
	if rows == nil {
		for i := range in {
			in[i] = true
		}
		return in, nil
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("rows: an empty mini-batch")
	}
	for _, i := range rows {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("rows: index %d outside the batch of %d rows", i, n)
		}
		if in[i] {
			return nil, fmt.Errorf("rows: row %d listed twice", i)
		}
		in[i] = true
	}
	return in, nil
}

// KLController supplies the KL coefficient for PPO's reward penalty.
type KLController interface {
	// Value is the current coefficient.
	Value() float64
	// Update adapts the coefficient to the observed mean KL after nSteps samples.
	Update(currentKL float64, nSteps int)
}

// FixedKL keeps the coefficient constant.
type FixedKL struct{ Coef float64 }

// Value implements KLController.
func (f *FixedKL) Value() float64 { return f.Coef }

// Update implements KLController; it does nothing.
func (f *FixedKL) Update(float64, int) {}

// SetCoef implements CoefSetter.
func (f *FixedKL) SetCoef(c float64) { f.Coef = c }

// AdaptiveKL is Ziegler et al.'s proportional controller (as in TRL): the coefficient moves
// toward Target KL with error clipped to +-0.2, at a rate set by Horizon:
//
//	e = clip(KL/target - 1, -0.2, 0.2);  coef *= 1 + e * nSteps / horizon
type AdaptiveKL struct {
	Coef    float64
	Target  float64
	Horizon float64
}

// NewAdaptiveKL validates its arguments, naming the bad one.
func NewAdaptiveKL(initCoef, target, horizon float64) (*AdaptiveKL, error) {
	if !(initCoef >= 0) {
		return nil, fmt.Errorf("kl_coef %v: want >= 0", initCoef)
	}
	if !(target > 0) {
		return nil, fmt.Errorf("kl_target %v: want > 0", target)
	}
	if !(horizon > 0) {
		return nil, fmt.Errorf("kl_horizon %v: want > 0", horizon)
	}
	return &AdaptiveKL{Coef: initCoef, Target: target, Horizon: horizon}, nil
}

// Value implements KLController.
func (a *AdaptiveKL) Value() float64 { return a.Coef }

// SetCoef implements CoefSetter (restoring a checkpoint).
func (a *AdaptiveKL) SetCoef(c float64) { a.Coef = c }

// Update implements KLController.
func (a *AdaptiveKL) Update(currentKL float64, nSteps int) {
	e := math.Min(math.Max(currentKL/a.Target-1, -0.2), 0.2)
	a.Coef *= 1 + e*float64(nSteps)/a.Horizon
}

// KLControlConfig selects PPO's KL coefficient controller. Each field becomes a command-line
// flag.
type KLControlConfig struct {
	// Kind is "fixed" (the coefficient never changes) or "adaptive" (it tracks Target).
	Kind string `json:"kl_control"`
	// InitCoef is the starting coefficient; >= 0.
	InitCoef float64 `json:"kl_coef"`
	// Target is the adaptive controller's per-sequence KL target (nats); > 0 when adaptive.
	Target float64 `json:"kl_target"`
	// Horizon is the adaptive controller's time constant in samples; > 0 when adaptive.
	Horizon float64 `json:"kl_horizon"`
}

// Validate names the first bad field.
func (c KLControlConfig) Validate() error {
	if !(c.InitCoef >= 0) || math.IsInf(c.InitCoef, 0) {
		return fmt.Errorf("kl_coef %v: want a finite value >= 0", c.InitCoef)
	}
	switch c.Kind {
	case "fixed":
		return nil
	case "adaptive":
		if !(c.Target > 0) || math.IsInf(c.Target, 0) {
			return fmt.Errorf("kl_target %v: want a finite value > 0 for the adaptive controller", c.Target)
		}
		if !(c.Horizon > 0) || math.IsInf(c.Horizon, 0) {
			return fmt.Errorf("kl_horizon %v: want a finite value > 0 for the adaptive controller", c.Horizon)
		}
		return nil
	}
	return fmt.Errorf("kl_control %q: want fixed or adaptive", c.Kind)
}

// New returns the configured controller.
func (c KLControlConfig) New() (KLController, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Kind == "fixed" {
		return &FixedKL{Coef: c.InitCoef}, nil
	}
	return NewAdaptiveKL(c.InitCoef, c.Target, c.Horizon)
}
