package rl

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// PPOTrainerConfig is a PPO run: shared options, the loss, the KL controller and the critic.
type PPOTrainerConfig struct {
	Train TrainConfig `json:"train"`
	// PPO holds the loss options; its KLCoef is taken from the controller every step.
	PPO       PPOConfig       `json:"ppo"`
	KLControl KLControlConfig `json:"kl_control"`
	ValueHead ValueHeadConfig `json:"value_head"`
	// SamplesPerPrompt is the number of completions per prompt; >= 1.
	SamplesPerPrompt int `json:"samples_per_prompt"`
	// MiniBatches splits each epoch's rows, reshuffled every epoch, into this many
	// mini-batches with one optimizer update each (TRL's num_mini_batches); advantages are
	// computed over the whole batch first. In [1, rows per step].
	MiniBatches int `json:"num_mini_batches"`
	// CriticWarmup is the number of first steps that train only the value head (policy frozen).
	CriticWarmup int `json:"critic_warmup"`
	// ValueLR is the value head's learning rate; 0 uses the policy's schedule.
	ValueLR float64 `json:"value_lr"`
}

// DefaultPPOTrainerConfig pairs DefaultTrainConfig with TRL's PPO defaults.
func DefaultPPOTrainerConfig() PPOTrainerConfig {
	p := objective.DefaultPPOConfig()
	return PPOTrainerConfig{Train: DefaultTrainConfig(), PPO: p,
		KLControl: KLControlConfig{Kind: "fixed", InitCoef: p.KLCoef, Target: 6, Horizon: 10000},
		ValueHead: DefaultValueHeadConfig(), SamplesPerPrompt: 1, MiniBatches: 1}
}

// Validate names the first bad field.
func (c PPOTrainerConfig) Validate() error {
	if err := c.Train.Validate(); err != nil {
		return err
	}
	if err := c.PPO.Validate(); err != nil {
		return err
	}
	if err := c.KLControl.Validate(); err != nil {
		return err
	}
	if err := c.ValueHead.Validate(); err != nil {
		return err
	}
	if c.SamplesPerPrompt < 1 {
		return fmt.Errorf("samples_per_prompt %d: want >= 1", c.SamplesPerPrompt)
	}
	if rows := c.Train.PromptsPerStep * c.SamplesPerPrompt; c.MiniBatches < 1 || c.MiniBatches > rows {
		return fmt.Errorf("num_mini_batches %d: want 1..%d (the rows of a step: prompts_per_step x samples_per_prompt)", c.MiniBatches, rows)
	}
	if c.CriticWarmup < 0 {
		return fmt.Errorf("critic_warmup %d: want >= 0", c.CriticWarmup)
	}
	if !(c.ValueLR >= 0) || math.IsInf(c.ValueLR, 0) {
		return fmt.Errorf("value_lr %v: want a finite value >= 0 (0: the policy's)", c.ValueLR)
	}
	return nil
}

// PPOTrainer is PPO with a value head on the policy's final hidden states, KL-in-reward
// against a frozen reference, GAE and clipped policy and value losses.
type PPOTrainer struct {
	*rolloutTrainer
	Config PPOTrainerConfig
	Value  *ValueHead
	KL     objective.KLController
}

// UsesReference reports whether the trainer keeps a frozen reference model: for a KL penalty
// (a positive or adaptive coefficient) or the KL diagnostics.
func (cfg PPOTrainerConfig) UsesReference() bool {
	return cfg.KLControl.InitCoef > 0 || cfg.KLControl.Kind == "adaptive" || cfg.Train.KLMetrics
}

// NewPPOTrainer builds a trainer for policy with a fresh value head (see SetValueHead to
// restore a saved one).
func NewPPOTrainer(policy nn.LM, tok Tokenizer, prompts PromptSource, reward *Combined, cfg PPOTrainerConfig) (*PPOTrainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newRolloutTrainer(policy, tok, prompts, reward, cfg.Train, cfg.UsesReference())
	if err != nil {
		return nil, err
	}
	vh, err := NewValueHead(policy.Backend(), policy.Width(), cfg.ValueHead, cfg.Train.AdamW())
	if err != nil {
		return nil, err
	}
	kl, err := cfg.KLControl.New()
	if err != nil {
		return nil, err
	}
	c.valueLR = cfg.ValueLR
	return &PPOTrainer{rolloutTrainer: c, Config: cfg, Value: vh, KL: kl}, nil
}

// Policy is the model being trained.
func (t *PPOTrainer) Policy() nn.LM { return t.policy }

// Reference is the frozen reference model, nil without a KL penalty or KL diagnostics.
func (t *PPOTrainer) Reference() *Reference { return t.ref }

// Steps is the number of steps taken.
func (t *PPOTrainer) Steps() int { return t.step }

// Notes are one-off remarks about the configuration.
func (t *PPOTrainer) Notes() []string { return t.notes }

// TrainStep samples a batch, computes old log-probs and values (no tape, no dropout) and
// reference log-probs, then runs Mu PPO epochs, each over MiniBatches shuffled mini-batches
// with one update apiece. During the critic warm-up only the value head learns.
func (t *PPOTrainer) TrainStep() (*StepReport, error) {
	start := time.Now()
	ro, rb, err := t.drawRollout(t.Config.SamplesPerPrompt)
	if err != nil {
		return nil, err
	}
	rep := &StepReport{Step: t.step + 1, Action: Proceed, RolloutSeconds: since(start), Completions: t.completionsOf(ro, rb),
		EnvSeconds: ro.episodeStats.EnvSeconds, EnvWaitSeconds: ro.episodeStats.WaitSeconds}
	m := map[string]float64{}
	sb, _, err := t.batchFor(ro, m)
	if err != nil {
		return nil, err
	}
	s, err := t.newPPOStep(ro, rb, sb, m)
	if err != nil {
		return nil, err
	}
	tally := newUpdateTally()
	epochSum := map[string]float64{}
	for k := 0; k < t.Config.Train.Mu; k++ {
		if err := t.runEpoch(s, k, tally, epochSum); err != nil {
			return nil, err
		}
	}
	t.stepMetrics(m, s, tally, epochSum)
	t.lossScaleInto(m, rep, tally)
	t.KL.Update(m["kl_ref_row_sum_mean"], ro.Rows())
	if err := t.finishStep(m); err != nil {
		return nil, err
	}
	t.attachMetrics(rep, m)
	rep.Seconds = since(start)
	return rep, finite(m)
}

// ppoStep is one step's batch and what its updates compare against.
type ppoStep struct {
	ro     *Rollout
	rb     *RewardBatch
	sb     *seqBatch
	old    *seqOut // the policy's log-probs and values before any update
	ref    *seqOut // the reference model's log-probs (old without a reference model)
	hasEOS []bool  // per row: the completion ended with EOS
	// turnRewards are the episodes' rewards by token (nil for single completions).
	turnRewards [][]float64
	pcfg        PPOConfig
	warm        bool // critic warm-up: only the value head learns
}

// newPPOStep evaluates the policy and the reference on sb (no tape, no dropout) and fixes the
// step's loss options; the sampler's log-prob mismatch goes into m.
func (t *PPOTrainer) newPPOStep(ro *Rollout, rb *RewardBatch, sb *seqBatch, m map[string]float64) (*ppoStep, error) {
	done := t.timed(PhaseOldLogp)
	old, err := t.evalAll(sb, t.pol, t.Value, false, nil)
	done()
	if err != nil {
		return nil, err
	}
	sampleMismatch(m, ro, old.Logp)
	ref := old
	if t.ref != nil {
		done := t.timed(PhaseReference)
		ref, err = t.evalAll(sb, t.refm, nil, false, nil)
		done()
		if err != nil {
			return nil, fmt.Errorf("reference log-probs: %w", err)
		}
	}
	hasEOS := make([]bool, ro.Rows())
	for i, tr := range ro.Masks.Truncated {
		hasEOS[i] = !tr
	}
	pcfg := t.Config.PPO
	pcfg.KLCoef = t.KL.Value()
	s := &ppoStep{ro: ro, rb: rb, sb: sb, old: old, ref: ref, hasEOS: hasEOS, pcfg: pcfg, warm: t.step < t.Config.CriticWarmup}
	if ro.Episodes != nil {
		s.turnRewards = turnRewards(ro, rb.Total, t.reward.Weight(EnvReward{}.Name()))
	}
	return s, nil
}

// runEpoch runs epoch k, one update per mini-batch, and adds the epoch's ratio statistics
// (each row's log-probs as its own mini-batch saw them) to epochSum.
func (t *PPOTrainer) runEpoch(s *ppoStep, k int, tally *updateTally, epochSum map[string]float64) error {
	var res *objective.PPOResult
	epoch := newSeqOut(s.sb.N, s.sb.W, true)
	for j, rows := range t.miniBatches(s.ro.Rows(), k) {
		up, r, err := t.ppoUpdate(s, rows, k*t.Config.MiniBatches+j, epoch)
		if err != nil {
			return err
		}
		res = r
		tally.computedOne(up, res.Diagnostics.Map(), res.Loss)
		tally.appliedOne(up)
	}
	meanInto(epochSum, ratioStats(epoch.Logp, s.old.Logp, res.Advantages, s.ro.Masks.Loss, 1-s.pcfg.ClipRange, 1+s.pcfg.ClipRange))
	return nil
}

// ppoUpdate runs one update on the mini-batch rows (nil: the whole batch): the PPO loss over
// the whole batch, with rows outside the mini-batch taken from epoch, and the gradients of
// the mini-batch's rows (the value head's only during the warm-up).
func (t *PPOTrainer) ppoUpdate(s *ppoStep, rows []int, index int, epoch *seqOut) (*updateResult, *objective.PPOResult, error) {
	mb := s.sb
	if rows != nil {
		var err error
		if mb, err = t.rowsBatch(s.ro, rows); err != nil {
			return nil, nil, err
		}
	}
	var res *objective.PPOResult
	up, err := t.update(mb, updateSpec{vh: t.Value, policyGrad: !s.warm, index: index}, func(cur *seqOut) (*tokenGrads, error) {
		full := spreadRows(cur, rows, epoch)
		in := objective.PPOInputs{Scores: s.rb.Total, HasEOS: s.hasEOS, Logp: full.Logp, OldLogp: s.old.Logp, RefLogp: s.ref.Logp,
			Values: full.Values, OldValues: s.old.Values, ResponseMask: s.ro.Masks.Response, LossMask: s.ro.Masks.Loss,
			Entropy: full.Entropy, Rows: rows, TurnRewards: s.turnRewards}
		var err error
		if res, err = objective.PPOLoss(s.pcfg, in); err != nil {
			return nil, err
		}
		g := &tokenGrads{Values: pickRows(res.GradValues, rows, mb.W), Proceed: true}
		if !s.warm {
			g.Logp = pickRows(res.GradLogp, rows, mb.W)
			if res.GradEntropy != nil {
				g.Entropy = pickRows(res.GradEntropy, rows, mb.W)
			}
		}
		return g, nil
	})
	return up, res, err
}

// stepMetrics adds the updates' and epochs' means, the KL penalty's share, the rewards and the
// learning rate to m.
func (t *PPOTrainer) stepMetrics(m map[string]float64, s *ppoStep, tally *updateTally, epochSum map[string]float64) {
	tally.meansInto(m)
	for k, v := range epochSum {
		m[k] = v / float64(t.Config.Train.Mu)
	}
	if tally.applied > 0 {
		m["grad_norm"] = tally.gradNormSum / float64(tally.applied)
	}
	m["kl_coef"] = s.pcfg.KLCoef
	m["kl_mean"] = m["kl_ref_mean"]
	if pen := s.pcfg.KLCoef * math.Abs(m["kl_ref_row_sum_mean"]); pen > 0 {
		m["kl_share"] = pen / (pen + meanAbs(s.rb.Total))
	} else {
		m["kl_share"] = 0
	}
	m["reward_mean"], m["reward_std"] = objective.MeanStd(s.rb.Total)
	m["critic_warmup"] = b2f(s.warm)
	m["recompute_mismatch"] = float64(tally.mismatches)
	m["lr"] = float64(t.sched.At(t.step))
	addRewardTerms(m, s.rb)
	rewardByTask(m, s.ro, s.rb.Total)
}

// miniBatches splits n rows for epoch k: one nil entry (the whole batch, in order) with a
// single mini-batch, else MiniBatches sorted row sets of sizes that differ by at most one from
// a permutation seeded by the run's seed, the step and the epoch (the sampling RNG is left
// alone, so the rollouts do not depend on the split).
func (t *PPOTrainer) miniBatches(n, k int) [][]int {
	nb := t.Config.MiniBatches
	if nb <= 1 {
		return [][]int{nil}
	}
	perm := rng.New(t.cfg.Seed ^ 0x9e3779b97f4a7c15 + uint64(t.step)*1_000_003 + uint64(k)*7919).Perm(n)
	out := make([][]int, nb)
	for j := range out {
		rows := append([]int(nil), perm[j*n/nb:(j+1)*n/nb]...)
		slices.Sort(rows)
		out[j] = rows
	}
	return out
}

// spreadRows copies a mini-batch's outputs (row k is batch row rows[k]; rows nil: the whole
// batch) into the batch-shaped dst and returns dst.
func spreadRows(cur *seqOut, rows []int, dst *seqOut) *seqOut {
	for k := range cur.Logp {
		i := k
		if rows != nil {
			i = rows[k]
		}
		copy(dst.Logp[i], cur.Logp[k])
		copy(dst.Entropy[i], cur.Entropy[k])
		if cur.Values != nil {
			copy(dst.Values[i], cur.Values[k])
		}
	}
	return dst
}

// pickRows returns the mini-batch rows of a batch-shaped gradient, w positions wide.
func pickRows(g [][]float64, rows []int, w int) [][]float64 {
	if rows == nil {
		return g
	}
	out := make([][]float64, len(rows))
	for k, i := range rows {
		out[k] = g[i][:w]
	}
	return out
}

// ratioStats are the clip diagnostics of a PPO epoch over the loss mask (per-token advantages).
func ratioStats(logp, old, adv, mask [][]float64, lo, hi float64) map[string]float64 {
	s := objective.NewClipStats(lo, hi)
	for i := range mask {
		for t, w := range mask[i] {
			if w != 0 {
				s.Add(math.Exp(logp[i][t]-old[i][t]), adv[i][t])
			}
		}
	}
	c := s.Summary(s.Count())
	return map[string]float64{"active_fraction": c.Active, "clipped_fraction": c.Clipped, "clip_ratio_low_mean": c.LowMean,
		"clip_ratio_high_mean": c.HighMean, "clip_ratio_region_mean": c.RegionMean, "ratio_mean_positive_adv": c.MeanPositiveAdv,
		"ratio_mean_negative_adv": c.MeanNegativeAdv, "ratio_p10": c.P10, "ratio_p50": c.P50, "ratio_p90": c.P90,
		"learnable_tokens": float64(s.Count())}
}

func meanAbs(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += math.Abs(x)
	}
	return s / float64(len(xs))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// SaveValueHead adds the value head (parameters and config) to a checkpoint state.
func (t *PPOTrainer) SaveValueHead(st *checkpoint.State) error {
	p, err := t.Value.ParamsToHost()
	if err != nil {
		return err
	}
	if st.Extra == nil {
		st.Extra = map[string][]float32{}
	}
	if st.Meta == nil {
		st.Meta = map[string]string{}
	}
	st.Extra[ValueHeadExtra] = p
	st.Meta[ValueHeadMeta] = t.Value.MetaJSON()
	return nil
}

// LoadValueHead restores a value head saved by SaveValueHead; ok is false when st has none.
func (t *PPOTrainer) LoadValueHead(st *checkpoint.State) (ok bool, err error) {
	p, ok := st.Extra[ValueHeadExtra]
	if !ok {
		return false, nil
	}
	if err := t.Value.SetParams(p); err != nil {
		return true, fmt.Errorf("checkpoint value head: %w", err)
	}
	return true, nil
}
