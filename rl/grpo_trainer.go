package rl

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// GRPOTrainerConfig is a GRPO run: the shared training options and the loss's options.
type GRPOTrainerConfig struct {
	Train TrainConfig `json:"train"`
	// GRPO holds the loss options; its MaxCompletionLength is set from Train.Rollout.MaxNewTokens
	// (from the episodes' MaxEpisodeTokens with episodes).
	GRPO GRPOConfig `json:"grpo"`
}

// DefaultGRPOTrainerConfig pairs DefaultTrainConfig with DefaultGRPOConfig.
func DefaultGRPOTrainerConfig() GRPOTrainerConfig {
	return GRPOTrainerConfig{Train: DefaultTrainConfig(), GRPO: objective.DefaultGRPOConfig()}
}

// Validate names the first bad field.
func (c GRPOTrainerConfig) Validate() error {
	if err := c.Train.Validate(); err != nil {
		return err
	}
	g := c.GRPO
	g.MaxCompletionLength = c.Train.maxCompletion()
	return g.Validate()
}

// GRPOTrainer samples groups of completions per prompt, scores them, and updates the policy
// with the GRPO loss (see [objective.GRPOLoss]).
type GRPOTrainer struct {
	*rolloutTrainer
	Config GRPOTrainerConfig
}

// UsesReference reports whether the trainer keeps a frozen reference model: for the KL
// penalty (Beta > 0), a KL hard cap, or the KL diagnostics.
func (cfg GRPOTrainerConfig) UsesReference() bool {
	return cfg.GRPO.Beta > 0 || cfg.GRPO.KLHardCap > 0 || cfg.Train.KLMetrics
}

// NewGRPOTrainer builds a trainer for policy (gradients are enabled here). Prompts come from
// prompts, completions are decoded with tok and scored by reward. A frozen reference copy is
// made when Beta > 0, a KL hard cap is set, or Train.KLMetrics asks for the KL diagnostics.
func NewGRPOTrainer(policy nn.LM, tok Tokenizer, prompts PromptSource, reward *Combined, cfg GRPOTrainerConfig) (*GRPOTrainer, error) {
	cfg.GRPO.MaxCompletionLength = cfg.Train.maxCompletion()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newRolloutTrainer(policy, tok, prompts, reward, cfg.Train, cfg.UsesReference())
	if err != nil {
		return nil, err
	}
	return &GRPOTrainer{rolloutTrainer: c, Config: cfg}, nil
}

// Policy is the model being trained.
func (t *GRPOTrainer) Policy() nn.LM { return t.policy }

// Reference is the frozen reference model, nil when the config needs none.
func (t *GRPOTrainer) Reference() *Reference { return t.ref }

// Steps is the number of steps taken.
func (t *GRPOTrainer) Steps() int { return t.step }

// Notes are one-off remarks about the configuration (to log at the start of a run).
func (t *GRPOTrainer) Notes() []string { return t.notes }

// Stopped returns the reason training was stopped (KL hard cap with kl_cap_action stop), or "".
func (t *GRPOTrainer) Stopped() string { return t.stopped }

// TrainStep samples one batch (PromptsPerStep prompts x GroupSize completions), computes old
// and reference log-probs, and runs Mu updates with the GRPO loss. Skipped updates are not
// applied; a Stop action ends training (later calls fail).
func (t *GRPOTrainer) TrainStep() (*StepReport, error) {
	if t.stopped != "" {
		return nil, fmt.Errorf("training was stopped at step %d: %s", t.step, t.stopped)
	}
	start := time.Now()
	ro, rb, err := t.drawRollout(t.Config.GRPO.GroupSize)
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
	s := &grpoStep{ro: ro, rb: rb, sb: sb}
	if s.ref, err = t.referenceLogp(sb); err != nil {
		return nil, err
	}
	tally, err := t.runUpdates(s, rep, m)
	if err != nil {
		return nil, err
	}
	t.stepMetrics(m, s, tally)
	t.lossScaleInto(m, rep, tally)
	if rep.Action == Stop {
		t.stopped = rep.Reason
	}
	if err := t.finishStep(m); err != nil {
		return nil, err
	}
	t.finishReport(rep, m)
	rep.Seconds = since(start)
	return rep, finite(m)
}

// grpoStep is one step's batch and the log-probs its updates compare against.
type grpoStep struct {
	ro  *Rollout
	rb  *RewardBatch
	sb  *seqBatch
	ref *seqOut // the reference model's; nil without one
	old *seqOut // the policy's before the first update, set by it
}

// referenceLogp evaluates the reference model on sb; nil without a reference model.
func (t *GRPOTrainer) referenceLogp(sb *seqBatch) (*seqOut, error) {
	if t.ref == nil {
		return nil, nil
	}
	defer t.timed(PhaseReference)()
	ref, err := t.evalAll(sb, t.refm, nil, false, nil)
	if err != nil {
		return nil, fmt.Errorf("reference log-probs: %w", err)
	}
	return ref, nil
}

// runUpdates runs up to Mu updates, stopping at the first the loss does not let proceed (its
// action and reason go into rep).
func (t *GRPOTrainer) runUpdates(s *grpoStep, rep *StepReport, m map[string]float64) (*updateTally, error) {
	tally := newUpdateTally()
	for k := 0; k < t.Config.Train.Mu; k++ {
		up, res, err := t.grpoUpdate(s, k)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			sampleMismatch(m, s.ro, up.cur.Logp)
		}
		tally.computedOne(up, res.Diagnostics.Map(), res.Loss)
		if !up.g.Proceed {
			if rep.Action == Proceed {
				rep.Action, rep.Reason = res.Action, res.Reason
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("update %d of step %d: %s (%s)", k+1, t.step+1, res.Action, res.Reason))
			break
		}
		tally.appliedOne(up)
	}
	return tally, nil
}

// grpoUpdate runs update k: the GRPO loss of the current policy against the policy before the
// first update (so the first ratio is exactly 1) and the reference.
func (t *GRPOTrainer) grpoUpdate(s *grpoStep, k int) (*updateResult, *objective.GRPOResult, error) {
	var res *objective.GRPOResult
	up, err := t.update(s.sb, updateSpec{policyGrad: true, index: k}, func(cur *seqOut) (*tokenGrads, error) {
		if s.old == nil {
			s.old = cur
		}
		in := objective.GRPOInputs{Rewards: s.rb.Total, Logp: cur.Logp, OldLogp: s.old.Logp, ResponseMask: s.ro.Masks.Response,
			LossMask: s.ro.Masks.Loss, Entropy: cur.Entropy, Counted: countedRows(s.ro)}
		if s.ref != nil {
			in.RefLogp = s.ref.Logp
		}
		var err error
		if res, err = objective.GRPOLoss(t.Config.GRPO, in); err != nil {
			return nil, err
		}
		return &tokenGrads{Logp: res.GradLogp, Entropy: res.GradEntropy, Proceed: res.Action == Proceed}, nil
	})
	return up, res, err
}

// stepMetrics adds the updates' means, the learning rate and the rewards to m.
func (t *GRPOTrainer) stepMetrics(m map[string]float64, s *grpoStep, tally *updateTally) {
	tally.meansInto(m)
	if tally.applied > 0 {
		m["grad_norm"] = tally.gradNormSum / float64(tally.applied)
	}
	m["updates_applied"] = float64(tally.applied)
	m["recompute_mismatch"] = float64(tally.mismatches)
	m["lr"] = float64(t.sched.At(t.step))
	addRewardTerms(m, s.rb)
	rewardByTask(m, s.ro, s.rb.Total)
}

// finishReport puts the metrics of the finished step and their warnings in rep.
func (t *GRPOTrainer) finishReport(rep *StepReport, m map[string]float64) {
	t.attachMetrics(rep, m)
	if hardCap := t.Config.GRPO.KLHardCap; m["kl_mean"] > hardCap && hardCap > 0 && rep.Action == Proceed {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("mean KL %.4g past kl_hard_cap %.4g", m["kl_mean"], hardCap))
	}
}
