package objective

import (
	"fmt"
	"math"
)

// LossType selects how per-token GRPO losses are aggregated over the loss mask.
type LossType string

// The GRPO aggregations. N is the number of rows, L the max completion length.
const (
	// LossGRPO averages each row over its tokens, then averages rows: short completions weigh
	// more per token (the original GRPO paper; biased toward length).
	LossGRPO LossType = "grpo"
	// LossBNPO divides the sum over all tokens by the number of tokens in the batch.
	LossBNPO LossType = "bnpo"
	// LossDrGRPO divides the sum by N*L, a constant, removing the length bias (Dr. GRPO).
	LossDrGRPO LossType = "dr_grpo"
	// LossDAPO divides the sum by the number of tokens in the whole (global) batch; on one
	// process it equals bnpo.
	LossDAPO LossType = "dapo"
)

// ScaleRewards selects the standard deviation that divides group-centred rewards.
type ScaleRewards string

// The reward scalings.
const (
	ScaleGroup ScaleRewards = "group" // std of the row's group
	ScaleBatch ScaleRewards = "batch" // std of the whole batch
	ScaleNone  ScaleRewards = "none"  // centre only (Dr. GRPO)
)

// Action is what the trainer should do with a step's result.
type Action string

// The step actions.
const (
	Proceed Action = "proceed" // apply the gradient
	Skip    Action = "skip"    // do not apply this step's gradient; continue training
	Stop    Action = "stop"    // stop training: the policy has drifted past the KL hard cap
)

// GRPOConfig holds every GRPO loss option. Each field becomes a command-line flag.
type GRPOConfig struct {
	// GroupSize is the number of completions sampled per prompt; groups are contiguous rows. >= 1.
	GroupSize int `json:"group_size"`
	// LossType is the token aggregation: grpo, bnpo, dr_grpo or dapo.
	LossType LossType `json:"loss_type"`
	// ScaleRewards divides centred rewards by the group's std, the batch's std, or nothing.
	ScaleRewards ScaleRewards `json:"scale_rewards"`
	// AdvantageEps is added to the std before dividing (1e-4 as in TRL); > 0.
	AdvantageEps float64 `json:"advantage_eps"`
	// EpsilonLow clips the ratio from below at 1-EpsilonLow; in [0, 1).
	EpsilonLow float64 `json:"epsilon_low"`
	// EpsilonHigh clips the ratio from above at 1+EpsilonHigh (DAPO's clip-higher uses 0.28); >= 0.
	EpsilonHigh float64 `json:"epsilon_high"`
	// Beta weighs the per-token KL penalty against the reference model; 0 disables it. >= 0.
	Beta float64 `json:"beta"`
	// KLEstimator is the per-token KL estimator for the penalty and diagnostics (k1, k2, k3).
	KLEstimator KLEstimator `json:"kl_estimator"`
	// MaxCompletionLength is the sampler's completion limit; dr_grpo divides by N times it. >= 1.
	MaxCompletionLength int `json:"max_completion_length"`
	// EntropyCoef subtracts EntropyCoef times the aggregated per-token entropy from the loss
	// (an exploration bonus); 0 disables it and the entropy input is then not needed.
	EntropyCoef float64 `json:"entropy_coef"`
	// MinTokenRatio and MaxTokenRatio drop from the loss mask the tokens whose ratio
	// exp(logp-old_logp) lies outside [min, max] (misaligned or stale tokens); 0 disables each.
	MinTokenRatio float64 `json:"min_token_ratio"`
	MaxTokenRatio float64 `json:"max_token_ratio"`
	// MinLearnableTokens skips a step with fewer loss-mask tokens than this; 0 disables.
	MinLearnableTokens int `json:"min_learnable_tokens"`
	// MinLearnableFraction skips a step whose loss-mask tokens are fewer than this fraction of
	// the response tokens (a batch made almost only of forced tokens); in [0, 1], 0 disables.
	MinLearnableFraction float64 `json:"min_learnable_fraction"`
	// KLHardCap is the largest mean per-token KL (nats) accepted; 0 disables.
	KLHardCap float64 `json:"kl_hard_cap"`
	// KLCapAction is what to do past the cap: skip the step or stop training.
	KLCapAction Action `json:"kl_cap_action"`
}

// DefaultGRPOConfig returns TRL's defaults (group std scaling, k3, epsilon 0.2, beta 0.04).
func DefaultGRPOConfig() GRPOConfig {
	return GRPOConfig{
		GroupSize:           8,
		LossType:            LossDAPO,
		ScaleRewards:        ScaleGroup,
		AdvantageEps:        1e-4,
		EpsilonLow:          0.2,
		EpsilonHigh:         0.2,
		Beta:                0.04,
		KLEstimator:         KLK3,
		MaxCompletionLength: 256,
		KLCapAction:         Skip,
	}
}

// Validate names the first bad field.
func (c GRPOConfig) Validate() error {
	if c.GroupSize < 1 {
		return fmt.Errorf("group_size %d: want >= 1", c.GroupSize)
	}
	switch c.LossType {
	case LossGRPO, LossBNPO, LossDrGRPO, LossDAPO:
	default:
		return fmt.Errorf("loss_type %q: want grpo, bnpo, dr_grpo or dapo", string(c.LossType))
	}
	switch c.ScaleRewards {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return fmt.Errorf("scale_rewards %q: want group, batch or none", string(c.ScaleRewards))
	}
	if !(c.AdvantageEps > 0) {
		return fmt.Errorf("advantage_eps %v: want > 0", c.AdvantageEps)
	}
	if !(c.EpsilonLow >= 0 && c.EpsilonLow < 1) {
		return fmt.Errorf("epsilon_low %v: want a value in [0, 1)", c.EpsilonLow)
	}
	if !(c.EpsilonHigh >= 0) || math.IsInf(c.EpsilonHigh, 0) {
		return fmt.Errorf("epsilon_high %v: want a finite value >= 0", c.EpsilonHigh)
	}
	if !(c.Beta >= 0) || math.IsInf(c.Beta, 0) {
		return fmt.Errorf("beta %v: want a finite value >= 0", c.Beta)
	}
	if err := c.KLEstimator.Validate(); err != nil {
		return err
	}
	if c.MaxCompletionLength < 1 {
		return fmt.Errorf("max_completion_length %d: want >= 1", c.MaxCompletionLength)
	}
	if math.IsNaN(c.EntropyCoef) || math.IsInf(c.EntropyCoef, 0) {
		return fmt.Errorf("entropy_coef %v: want a finite value", c.EntropyCoef)
	}
	if !(c.MinTokenRatio >= 0) {
		return fmt.Errorf("min_token_ratio %v: want >= 0 (0 disables)", c.MinTokenRatio)
	}
	if !(c.MaxTokenRatio >= 0) {
		return fmt.Errorf("max_token_ratio %v: want >= 0 (0 disables)", c.MaxTokenRatio)
	}
	if c.MaxTokenRatio > 0 && c.MaxTokenRatio <= c.MinTokenRatio {
		return fmt.Errorf("max_token_ratio %v: want > min_token_ratio %v", c.MaxTokenRatio, c.MinTokenRatio)
	}
	if c.MinLearnableTokens < 0 {
		return fmt.Errorf("min_learnable_tokens %d: want >= 0", c.MinLearnableTokens)
	}
	if !(c.MinLearnableFraction >= 0 && c.MinLearnableFraction <= 1) {
		return fmt.Errorf("min_learnable_fraction %v: want a value in [0, 1]", c.MinLearnableFraction)
	}
	if !(c.KLHardCap >= 0) {
		return fmt.Errorf("kl_hard_cap %v: want >= 0 (0 disables)", c.KLHardCap)
	}
	if c.KLCapAction != Skip && c.KLCapAction != Stop {
		return fmt.Errorf("kl_cap_action %q: want skip or stop", string(c.KLCapAction))
	}
	return nil
}

// GRPOInputs are one step's host-side arrays: N rows (prompts x group size, groups contiguous)
// by T completion positions.
type GRPOInputs struct {
	Rewards []float64   // N sequence rewards
	Logp    [][]float64 // current policy log-probs of the sampled tokens (at the sampling temperature)
	OldLogp [][]float64 // log-probs of the policy that sampled the rollouts
	RefLogp [][]float64 // reference model log-probs; needed when Beta > 0
	// ResponseMask is 1 up to and including the first EOS; LossMask is it minus forced tokens.
	ResponseMask [][]float64
	LossMask     [][]float64
	// Entropy is the per-token entropy of the current policy; needed when EntropyCoef != 0.
	Entropy [][]float64
	// Counted, when set, says which rows count in the group statistics: a row left out (an
	// episode the environment failed) gets advantage 0 and must have an empty loss mask.
	Counted []bool
}

// GRPODiagnostics are the per-step GRPO metrics, logged under their JSON names. Fractions and
// means over loss-mask tokens are 0 (ratio statistics 1) when there are no such tokens.
type GRPODiagnostics struct {
	KLMean               float64 `json:"kl_mean"`                 // chosen estimator, loss-mask mean
	KLK1Mean             float64 `json:"kl_k1_mean"`              // k1 over the loss mask
	KLK2Mean             float64 `json:"kl_k2_mean"`              // k2 over the loss mask
	KLK3Mean             float64 `json:"kl_k3_mean"`              // k3 over the loss mask
	ClipRatioLowMean     float64 `json:"clip_ratio_low_mean"`     // ratio < 1-eps_low and A < 0
	ClipRatioHighMean    float64 `json:"clip_ratio_high_mean"`    // ratio > 1+eps_high and A > 0
	ClipRatioRegionMean  float64 `json:"clip_ratio_region_mean"`  // low or high
	ActiveFraction       float64 `json:"active_fraction"`         // ratio inside the clip range
	ClippedFraction      float64 `json:"clipped_fraction"`        // ratio outside the clip range
	RatioMean            float64 `json:"ratio_mean"`              // mean ratio
	RatioMeanPositiveAdv float64 `json:"ratio_mean_positive_adv"` // mean ratio where A > 0
	RatioMeanNegativeAdv float64 `json:"ratio_mean_negative_adv"` // mean ratio where A < 0
	RatioP10             float64 `json:"ratio_p10"`
	RatioP50             float64 `json:"ratio_p50"`
	RatioP90             float64 `json:"ratio_p90"`
	FracRewardZeroStd    float64 `json:"frac_reward_zero_std"` // groups with no reward spread (no signal)
	RewardMean           float64 `json:"reward_mean"`
	RewardStd            float64 `json:"reward_std"` // Bessel std over the batch
	AdvantageMin         float64 `json:"advantage_min"`
	AdvantageMax         float64 `json:"advantage_max"`
	AdvantageStd         float64 `json:"advantage_std"`
	AdvantageAbsMean     float64 `json:"advantage_abs_mean"`
	LossTokenFraction    float64 `json:"loss_token_fraction"` // loss-mask tokens / response tokens
	LearnableTokens      float64 `json:"learnable_tokens"`    // loss-mask tokens after ratio bounds
	ResponseTokens       float64 `json:"response_tokens"`
	RatioMaskedTokens    float64 `json:"ratio_masked_tokens"` // dropped by min/max_token_ratio
	CompletionLengthMean float64 `json:"completion_length_mean"`
	EntropyMean          float64 `json:"entropy_mean"` // loss-mask mean; 0 without entropy input
	PGLoss               float64 `json:"pg_loss"`      // aggregated clipped surrogate
	KLLoss               float64 `json:"kl_loss"`      // aggregated beta * KL
	EntropyLoss          float64 `json:"entropy_loss"` // aggregated -entropy_coef * entropy
	KLShare              float64 `json:"kl_share"`     // |kl_loss| / (|pg_loss| + |kl_loss|)
}

// Map returns the diagnostics keyed by their JSON names.
func (d GRPODiagnostics) Map() map[string]float64 { return structMap(d) }

// GRPOResult is the loss, its gradients and diagnostics for one step.
type GRPOResult struct {
	Advantages []float64 // N per-row advantages
	Loss       float64
	// GradLogp is d Loss / d Logp per token (0 off the loss mask).
	GradLogp [][]float64
	// GradEntropy is d Loss / d Entropy per token; nil when EntropyCoef is 0.
	GradEntropy [][]float64
	// EffectiveLossMask is the loss mask after the ratio bounds.
	EffectiveLossMask [][]float64
	Diagnostics       GRPODiagnostics
	// Action is Proceed, or Skip/Stop with Reason; gradients are zero unless Proceed.
	Action Action
	Reason string
}

// GroupAdvantages returns (r - mean_group) / (std + eps) per row with Bessel-corrected std of
// the row's group (ScaleGroup) or of the batch (ScaleBatch), or r - mean_group (ScaleNone).
// It also returns the fraction of groups whose std is zero (no learning signal).
func GroupAdvantages(rewards []float64, groupSize int, scale ScaleRewards, eps float64) (adv []float64, fracZeroStd float64, err error) {
	return GroupAdvantagesOf(rewards, nil, groupSize, scale, eps)
}

// GroupAdvantagesOf is GroupAdvantages over the counted rows only (all when counted is nil):
// the means and deviations leave the other rows out, and their advantage is 0. A group with
// no counted row has no signal and counts among the zero-deviation groups.
func GroupAdvantagesOf(rewards []float64, counted []bool, groupSize int, scale ScaleRewards, eps float64) (adv []float64, fracZeroStd float64, err error) {
	if groupSize < 1 {
		return nil, 0, fmt.Errorf("group_size %d: want >= 1", groupSize)
	}
	if err := checkVector("rewards", rewards, len(rewards)); err != nil {
		return nil, 0, err
	}
	if len(rewards)%groupSize != 0 {
		return nil, 0, fmt.Errorf("rewards: %d values is not a multiple of group_size %d", len(rewards), groupSize)
	}
	if counted != nil && len(counted) != len(rewards) {
		return nil, 0, fmt.Errorf("counted: %d values for %d rewards", len(counted), len(rewards))
	}
	_, batchStd := MeanStd(countedOf(rewards, counted))
	adv = make([]float64, len(rewards))
	groups := len(rewards) / groupSize
	zero := 0
	for g := 0; g < groups; g++ {
		r := rewards[g*groupSize : (g+1)*groupSize]
		var in []bool
		if counted != nil {
			in = counted[g*groupSize : (g+1)*groupSize]
		}
		m, s := MeanStd(countedOf(r, in))
		if math.Abs(s) <= 1e-8 {
			zero++
		}
		for j, x := range r {
			if in != nil && !in[j] {
				continue
			}
			a := x - m
			switch scale {
			case ScaleGroup:
				a /= s + eps
			case ScaleBatch:
				a /= batchStd + eps
			case ScaleNone:
			default:
				return nil, 0, fmt.Errorf("scale_rewards %q: want group, batch or none", string(scale))
			}
			adv[g*groupSize+j] = a
		}
	}
	if groups > 0 {
		fracZeroStd = float64(zero) / float64(groups)
	}
	return adv, fracZeroStd, nil
}

// countedOf returns the counted values of xs (all of them when counted is nil).
func countedOf(xs []float64, counted []bool) []float64 {
	if counted == nil {
		return xs
	}
	var out []float64
	for i, x := range xs {
		if counted[i] {
			out = append(out, x)
		}
	}
	return out
}

// GRPOLoss computes the GRPO loss, its exact gradient with respect to each token's log-prob
// (and entropy), and the step's diagnostics. Per token on the (effective) loss mask:
//
//	ratio = exp(logp - old_logp)
//	l_t   = -min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A) + beta*KL_t - entropy_coef*H_t
//
// with A the group advantage (r - mean_group) / (std + eps) and KL_t the k1, k2 or k3 estimate
// (k3 = exp(ref-logp) - (ref-logp) - 1, TRL's choice), aggregated by LossType: grpo the mean over
// rows of each row's mean, bnpo and dapo the sum over tokens / tokens, dr_grpo the sum / (rows *
// max_completion_length). The gradient is exact: -A*ratio*w_t where the unclipped branch is the
// minimum, 0 where the clip holds, plus beta*dKL/dlogp*w_t, with w_t the token's aggregation
// weight. Tokens whose ratio is outside the ratio bounds are dropped and counted; a step with
// too few learnable tokens is skipped, and a KL hard cap skips or stops, each with a reason.
func GRPOLoss(cfg GRPOConfig, in GRPOInputs) (*GRPOResult, error) {
	if err := checkGRPOInputs(cfg, in); err != nil {
		return nil, err
	}
	adv, fracZero, err := GroupAdvantagesOf(in.Rewards, in.Counted, cfg.GroupSize, cfg.ScaleRewards, cfg.AdvantageEps)
	if err != nil {
		return nil, err
	}
	n, T := len(in.Rewards), cols(in.Logp)
	res := &GRPOResult{Advantages: adv, GradLogp: Zeros(n, T), EffectiveLossMask: Zeros(n, T), Action: Proceed}
	tok := maskTokens(cfg, in, res.EffectiveLossMask)
	weight := tokenWeights(cfg, res.EffectiveLossMask, tok.learn)
	sums := accumulateGRPO(cfg, in, res, tok.ratio, weight)
	res.Loss = res.Diagnostics.PGLoss + res.Diagnostics.KLLoss + res.Diagnostics.EntropyLoss
	grpoDiagnostics(&res.Diagnostics, in, adv, fracZero, tok, sums)
	decideStep(cfg, res, tok, maskCount(in.LossMask))
	return res, nil
}

// checkGRPOInputs names the first input whose shape does not fit the batch.
func checkGRPOInputs(cfg GRPOConfig, in GRPOInputs) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	n := len(in.Rewards)
	if n == 0 {
		return fmt.Errorf("rewards: empty batch")
	}
	T := cols(in.Logp)
	if err := checkMatrix("logp", in.Logp, n, T); err != nil {
		return err
	}
	if err := checkMatrix("old_logp", in.OldLogp, n, T); err != nil {
		return err
	}
	if cfg.Beta > 0 || in.RefLogp != nil {
		if err := checkMatrix("ref_logp", in.RefLogp, n, T); err != nil {
			return err
		}
	}
	if err := checkMasks(in.ResponseMask, in.LossMask, n, T); err != nil {
		return err
	}
	for i, c := range in.Counted {
		if !c && maskCount(in.LossMask[i:i+1]) > 0 {
			return fmt.Errorf("counted row %d: left out of the group statistics, yet its loss mask trains tokens", i)
		}
	}
	if cfg.EntropyCoef != 0 || in.Entropy != nil {
		if err := checkMatrix("entropy", in.Entropy, n, T); err != nil {
			if cfg.EntropyCoef != 0 {
				return fmt.Errorf("%w (needed because entropy_coef is %v)", err, cfg.EntropyCoef)
			}
			return err
		}
	}
	if cfg.LossType == LossDrGRPO && T > cfg.MaxCompletionLength {
		return fmt.Errorf("max_completion_length %d: the batch has %d completion positions", cfg.MaxCompletionLength, T)
	}
	return nil
}

// tokenCounts are the batch's ratios and how its tokens were counted.
type tokenCounts struct {
	ratio                      [][]float64 // exp(logp - old_logp) at every position
	respTokens, learn, dropped int         // response tokens, those learned from, those dropped by the ratio bounds
}

// maskTokens computes the ratios and writes the effective loss mask: the loss mask less the
// tokens whose ratio is outside [min_token_ratio, max_token_ratio].
func maskTokens(cfg GRPOConfig, in GRPOInputs, mask [][]float64) tokenCounts {
	n, T := len(in.Rewards), cols(in.Logp)
	c := tokenCounts{ratio: Zeros(n, T)}
	for i := 0; i < n; i++ {
		for t := 0; t < T; t++ {
			c.ratio[i][t] = math.Exp(in.Logp[i][t] - in.OldLogp[i][t])
			if in.ResponseMask[i][t] != 0 {
				c.respTokens++
			}
			if in.LossMask[i][t] == 0 {
				continue
			}
			r := c.ratio[i][t]
			if (cfg.MinTokenRatio > 0 && r < cfg.MinTokenRatio) || (cfg.MaxTokenRatio > 0 && r > cfg.MaxTokenRatio) {
				c.dropped++
				continue
			}
			mask[i][t] = 1
			c.learn++
		}
	}
	return c
}

// tokenWeights is each row's per-token weight in loss = sum_t w_t * l_t, by loss type.
func tokenWeights(cfg GRPOConfig, mask [][]float64, learn int) func(row int) float64 {
	n := len(mask)
	switch cfg.LossType {
	case LossGRPO:
		rowCount := make([]float64, n)
		for i := range mask {
			for _, v := range mask[i] {
				rowCount[i] += v
			}
		}
		return func(i int) float64 { return 1 / (float64(n) * math.Max(rowCount[i], 1)) }
	case LossBNPO, LossDAPO:
		w := 1 / math.Max(float64(learn), 1)
		return func(int) float64 { return w }
	}
	w := 1 / float64(n*cfg.MaxCompletionLength) // LossDrGRPO
	return func(int) float64 { return w }
}

// grpoSums are what accumulateGRPO adds up over the learned tokens for the diagnostics.
type grpoSums struct {
	clip        ClipStats
	k           [3]float64 // k1, k2, k3 estimates of KL(policy || reference)
	kl, entropy float64
}

// accumulateGRPO adds each learned token's clipped policy-gradient, KL and entropy terms to the
// loss and writes their gradients with respect to the log-probs (and the entropies).
func accumulateGRPO(cfg GRPOConfig, in GRPOInputs, res *GRPOResult, ratio [][]float64, weight func(int) float64) grpoSums {
	n, T := len(in.Rewards), cols(in.Logp)
	d, mask, adv := &res.Diagnostics, res.EffectiveLossMask, res.Advantages
	needRef := cfg.Beta > 0 || in.RefLogp != nil
	lo, hi := 1-cfg.EpsilonLow, 1+cfg.EpsilonHigh
	s := grpoSums{clip: NewClipStats(lo, hi)}
	if cfg.EntropyCoef != 0 {
		res.GradEntropy = Zeros(n, T)
	}
	for i := 0; i < n; i++ {
		A := adv[i]
		w := weight(i)
		for t := 0; t < T; t++ {
			if mask[i][t] == 0 {
				continue
			}
			r := ratio[i][t]
			cr := math.Min(math.Max(r, lo), hi)
			obj := math.Min(r*A, cr*A)
			d.PGLoss += -w * obj
			var g float64
			if (A > 0 && r <= hi) || (A < 0 && r >= lo) {
				g = -A * r // the unclipped branch is the minimum
			}
			if needRef {
				kl, dkl := cfg.KLEstimator.KL(in.Logp[i][t], in.RefLogp[i][t])
				s.kl += kl
				dd := in.Logp[i][t] - in.RefLogp[i][t]
				s.k[0] += dd
				s.k[1] += 0.5 * dd * dd
				s.k[2] += math.Exp(-dd) + dd - 1
				if cfg.Beta > 0 {
					d.KLLoss += w * cfg.Beta * kl
					g += cfg.Beta * dkl
				}
			}
			res.GradLogp[i][t] = w * g
			if in.Entropy != nil {
				s.entropy += in.Entropy[i][t]
			}
			if cfg.EntropyCoef != 0 {
				d.EntropyLoss -= w * cfg.EntropyCoef * in.Entropy[i][t]
				res.GradEntropy[i][t] = -w * cfg.EntropyCoef
			}
			s.clip.Add(r, A)
		}
	}
	return s
}

// grpoDiagnostics fills the means, fractions and quantiles the step reports.
func grpoDiagnostics(d *GRPODiagnostics, in GRPOInputs, adv []float64, fracZero float64, tok tokenCounts, s grpoSums) {
	n, learn := len(in.Rewards), tok.learn
	if learn > 0 {
		d.KLMean = s.kl / float64(learn)
		d.KLK1Mean = s.k[0] / float64(learn)
		d.KLK2Mean = s.k[1] / float64(learn)
		d.KLK3Mean = s.k[2] / float64(learn)
		d.EntropyMean = s.entropy / float64(learn)
	}
	c := s.clip.Summary(learn)
	d.ClipRatioLowMean, d.ClipRatioHighMean, d.ClipRatioRegionMean = c.LowMean, c.HighMean, c.RegionMean
	d.ActiveFraction, d.ClippedFraction = c.Active, c.Clipped
	d.RatioMean = meanOr1(s.clip.sum, learn)
	d.RatioMeanPositiveAdv, d.RatioMeanNegativeAdv = c.MeanPositiveAdv, c.MeanNegativeAdv
	d.RatioP10, d.RatioP50, d.RatioP90 = c.P10, c.P50, c.P90
	d.FracRewardZeroStd = fracZero
	d.RewardMean, d.RewardStd = MeanStd(in.Rewards)
	_, d.AdvantageStd = MeanStd(adv)
	d.AdvantageMin, d.AdvantageMax = adv[0], adv[0]
	for _, a := range adv {
		d.AdvantageMin = math.Min(d.AdvantageMin, a)
		d.AdvantageMax = math.Max(d.AdvantageMax, a)
		d.AdvantageAbsMean += math.Abs(a) / float64(n)
	}
	if tok.respTokens > 0 {
		d.LossTokenFraction = float64(maskCount(in.LossMask)) / float64(tok.respTokens)
	}
	d.LearnableTokens = float64(learn)
	d.ResponseTokens = float64(tok.respTokens)
	d.RatioMaskedTokens = float64(tok.dropped)
	d.CompletionLengthMean = float64(tok.respTokens) / float64(n)
	if den := math.Abs(d.PGLoss) + math.Abs(d.KLLoss); den > 0 {
		d.KLShare = math.Abs(d.KLLoss) / den
	}
}

// decideStep skips or stops the update, most severe reason first, zeroing the gradients of a
// step that does not proceed.
func decideStep(cfg GRPOConfig, res *GRPOResult, tok tokenCounts, lossTokens int) {
	d, learn, resp := &res.Diagnostics, tok.learn, tok.respTokens
	switch {
	case cfg.KLHardCap > 0 && d.KLMean > cfg.KLHardCap:
		res.Action = cfg.KLCapAction
		res.Reason = fmt.Sprintf("mean per-token KL %.4g exceeds kl_hard_cap %.4g", d.KLMean, cfg.KLHardCap)
	case learn == 0:
		res.Action = Skip
		res.Reason = fmt.Sprintf("no learnable tokens (%d response tokens, %d forced, %d outside the ratio bounds)", resp, resp-lossTokens, tok.dropped)
	case learn < cfg.MinLearnableTokens:
		res.Action = Skip
		res.Reason = fmt.Sprintf("%d learnable tokens, fewer than min_learnable_tokens %d", learn, cfg.MinLearnableTokens)
	case resp > 0 && float64(learn)/float64(resp) < cfg.MinLearnableFraction:
		res.Action = Skip
		res.Reason = fmt.Sprintf("learnable fraction %.3g (%d of %d response tokens) is below min_learnable_fraction %.3g", float64(learn)/float64(resp), learn, resp, cfg.MinLearnableFraction)
	}
	if res.Action == Proceed {
		return
	}
	for i := range res.GradLogp {
		clear(res.GradLogp[i])
		if res.GradEntropy != nil {
			clear(res.GradEntropy[i])
		}
	}
}
