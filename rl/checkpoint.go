package rl

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/internal/jsondiff"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor"
)

// StatefulSource is a PromptSource whose position can be saved in a checkpoint and restored,
// so a resumed trainer draws exactly the prompts an uninterrupted one would. The state is
// JSON. A source that is not stateful is restored by drawing and discarding as many prompts as
// the run had drawn, which is exact for any deterministic source (and slower for long runs).
// The built-in task sources (rl/tasks) are stateful.
type StatefulSource interface {
	PromptSource
	SourceState() (json.RawMessage, error)
	SetSourceState(json.RawMessage) error
}

// Checkpoint keys of the RL trainers' state. Besides the policy's parameters, AdamW moments
// (AdamM, AdamV) and the sampling RNG (RNG), a trainer's checkpoint holds its config under
// MetaConfig, the kind of trainer under MetaTrainer, its counters and positions under
// MetaState, the reference model's parameters under ReferenceExtra, and for PPO the value
// head (ValueHeadExtra, ValueHeadMeta) with its own AdamW moments.
const (
	MetaTrainer    = "rl_trainer"
	MetaConfig     = "rl_config"
	MetaState      = "rl_state"
	ReferenceExtra = "reference"
	ValueHeadAdamM = "value_head.adam_m"
	ValueHeadAdamV = "value_head.adam_v"
)

// savedState is the JSON under MetaState: everything beyond the tensors that carries over from
// one step to the next.
type savedState struct {
	Step     int `json:"step"`
	AdamStep int `json:"adam_step"`
	// Prompts is the prompt stream's position.
	Prompts promptPosition `json:"prompts"`
	// RefSyncs counts the reference syncs (the parameters are in ReferenceExtra); nil without
	// a reference model.
	RefSyncs *int `json:"ref_syncs,omitempty"`
	// ValueAdamStep is the value head optimizer's step (PPO).
	ValueAdamStep int `json:"value_adam_step,omitempty"`
	// KLCoef is the KL controller's coefficient (PPO); Go's JSON round-trips a float64 exactly.
	KLCoef *float64 `json:"kl_coef,omitempty"`
	// Stopped is the reason training was stopped (GRPO's KL hard cap), or "".
	Stopped string `json:"stopped,omitempty"`
	// NumTokens counts the rollouts' prompt and completion tokens so far.
	NumTokens int64 `json:"num_tokens,omitempty"`
	// LossScale is fp16's dynamic loss scaler (nil without one).
	LossScale *train.LossScaler `json:"loss_scale,omitempty"`
}

// savedScaler is a copy of s for a checkpoint (nil for nil).
func savedScaler(s *train.LossScaler) *train.LossScaler {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// restoreScaler continues s from a checkpoint's saved scaler: a run with loss scaling resumes
// with it, and a checkpoint and a trainer must agree on having one.
func restoreScaler(s, saved *train.LossScaler, path string) error {
	switch {
	case s == nil && saved == nil:
		return nil
	case s == nil:
		return fmt.Errorf("%s: the run scaled its loss (fp16); resume it with the same precision", path)
	case saved == nil:
		return fmt.Errorf("%s: the run did not scale its loss; resume it with the same precision", path)
	}
	*s = *saved
	return nil
}

// promptPosition is how far a run has read its prompt source.
type promptPosition struct {
	// Drawn counts the prompts taken from the source.
	Drawn int64 `json:"drawn"`
	// State is a StatefulSource's own state; without it a restore replays Drawn prompts.
	State json.RawMessage `json:"state,omitempty"`
}

// countedSource counts the prompts drawn from a source, for its position in a checkpoint.
type countedSource struct {
	src   PromptSource
	drawn int64
}

func (s *countedSource) Next() (Prompt, error) {
	p, err := s.src.Next()
	if err == nil {
		s.drawn++
	}
	return p, err
}

func (s *countedSource) position() (promptPosition, error) {
	pos := promptPosition{Drawn: s.drawn}
	if st, ok := s.src.(StatefulSource); ok {
		raw, err := st.SourceState()
		if err != nil {
			return pos, fmt.Errorf("prompt source state: %w", err)
		}
		pos.State = raw
	}
	return pos, nil
}

// restore moves a freshly built source to pos: from its saved state when the source is
// stateful, otherwise by drawing pos.Drawn prompts.
func (s *countedSource) restore(pos promptPosition) error {
	if pos.Drawn < 0 {
		return fmt.Errorf("prompt position %d is negative", pos.Drawn)
	}
	if st, ok := s.src.(StatefulSource); ok && len(pos.State) > 0 {
		if err := st.SetSourceState(pos.State); err != nil {
			return fmt.Errorf("prompt source: %w", err)
		}
		s.drawn = pos.Drawn
		return nil
	}
	for s.drawn < pos.Drawn {
		if _, err := s.Next(); err != nil {
			return fmt.Errorf("prompt source: replaying to prompt %d of %d: %w", s.drawn+1, pos.Drawn, err)
		}
	}
	return nil
}

// adamRecord describes an AdamW in a checkpoint's Optimizer entry.
func adamRecord(o *optim.AdamW, lr float64) checkpoint.Optimizer {
	return checkpoint.Optimizer{Name: "adamw", LR: lr, Beta1: float64(o.Config.Beta1), Beta2: float64(o.Config.Beta2),
		Eps: float64(o.Config.Eps), WeightDecay: float64(o.Config.WeightDecay),
		Extra: map[string]float64{"adam_step": float64(o.Step), "max_grad_norm": float64(o.Config.MaxGradNorm)}}
}

// stateFloats is f on the host: a copy, or with view and where the backend allows it
// (tensor.Flat.HostView) the floats themselves, so a checkpoint written at once takes no
// second copy of the parameters, moments and reference.
func stateFloats(f *tensor.Flat, view bool) ([]float32, error) {
	if view {
		if v, ok := f.HostView(); ok {
			return v, nil
		}
	}
	return f.ToHost()
}

// policyFloats is what the checkpoint saves of m's parameters (StateParams); with view, a
// GPT-2's, which are its whole parameter vector, as stateFloats gives them.
func policyFloats(m nn.LM, view bool) ([]float32, error) {
	if g, ok := unwrap(m).(*nn.GPT2LM); ok && view {
		return stateFloats(g.Params(), true)
	}
	return m.StateParams()
}

// newState fills a checkpoint state with what every trainer saves: the model's parameters and
// moments, the step, the config and the trainer kind.
// With view the floats may be the trainer's own memory (stateFloats), to be written out
// before the next step.
func newState(kind string, m nn.LM, opt *optim.AdamW, step int, lr float64, cfg any, view bool) (*checkpoint.State, error) {
	p, err := policyFloats(m, view)
	if err != nil {
		return nil, err
	}
	for i, v := range p {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("not saving: parameter %d of the policy is %v; the last checkpoint is kept", i, v)
		}
	}
	am, err := stateFloats(opt.M, view)
	if err != nil {
		return nil, err
	}
	av, err := stateFloats(opt.V, view)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	st := &checkpoint.State{Step: step, Params: p, AdamM: am, AdamV: av, Optimizer: adamRecord(opt, lr),
		Meta: map[string]string{MetaTrainer: kind, MetaConfig: string(raw)}, Extra: map[string][]float32{}}
	m.DescribeIn(st)
	return st, nil
}

func putState(st *checkpoint.State, s savedState) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	st.Meta[MetaState] = string(raw)
	return nil
}

// checkState validates what every trainer restores (model shape, trainer kind, optimizer
// state, config) and returns the saved counters. Nothing is changed.
func checkState(st *checkpoint.State, path, kind string, m nn.LM, cfg any) (savedState, error) {
	var s savedState
	if st == nil {
		return s, fmt.Errorf("%s: no checkpoint state", path)
	}
	if err := m.Matches(st); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if got := st.Meta[MetaTrainer]; got != kind {
		if got == "" {
			return s, fmt.Errorf("%s: checkpoint holds no %s trainer state (meta %q missing); start a new run from it with --init", path, kind, MetaTrainer)
		}
		return s, fmt.Errorf("%s: checkpoint is of a %s run, not %s", path, got, kind)
	}
	if st.AdamM == nil || st.AdamV == nil {
		return s, fmt.Errorf("%s: checkpoint has no optimizer state to resume from", path)
	}
	raw, ok := st.Meta[MetaState]
	if !ok {
		return s, fmt.Errorf("%s: meta %q is missing", path, MetaState)
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return s, fmt.Errorf("%s: meta %q: %w", path, MetaState, err)
	}
	if s.Step != st.Step || s.Step < 0 || s.AdamStep < 0 {
		return s, fmt.Errorf("%s: meta %q: step %d, adam_step %d, checkpoint step %d", path, MetaState, s.Step, s.AdamStep, st.Step)
	}
	savedCfg, ok := st.Meta[MetaConfig]
	if !ok {
		return s, fmt.Errorf("%s: meta %q is missing", path, MetaConfig)
	}
	var saved, cur any
	if err := json.Unmarshal([]byte(savedCfg), &saved); err != nil {
		return s, fmt.Errorf("%s: meta %q: %w", path, MetaConfig, err)
	}
	curRaw, err := json.Marshal(cfg)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(curRaw, &cur); err != nil {
		return s, err
	}
	if d := jsondiff.First(kind+" config", saved, cur, resumableFields); d != "" {
		return s, fmt.Errorf("%s: %s; a resumed run must keep it (only the number of steps may change)", path, d)
	}
	return s, nil
}

// resumableFields lists the config fields (JSON paths) a resume may change: the total number of
// steps (which changes the learning-rate schedule from the resume point on, as in nn/train).
var resumableFields = map[string]bool{"steps": true, "train.steps": true}

// restoreOpt uploads saved AdamW moments and sets the step.
func restoreOpt(o *optim.AdamW, m, v []float32, step int) error {
	if len(m) != o.M.Len() || len(v) != o.V.Len() {
		return fmt.Errorf("moments of %d and %d values for an optimizer of %d", len(m), len(v), o.M.Len())
	}
	if err := o.M.Upload(m); err != nil {
		return err
	}
	if err := o.V.Upload(v); err != nil {
		return err
	}
	o.Step = step
	return nil
}

// checkpointState saves the state the GRPO and PPO trainers share.
func (c *rolloutTrainer) checkpointState(kind string, cfg any, view bool) (*checkpoint.State, savedState, error) {
	st, err := newState(kind, c.policy, c.opt, c.step, c.cfg.LR, cfg, view)
	if err != nil {
		return nil, savedState{}, err
	}
	st.RNG = c.rng.State()
	s := savedState{Step: c.step, AdamStep: c.opt.Step, Stopped: c.stopped, NumTokens: c.numTokens, LossScale: savedScaler(c.scaler)}
	if s.Prompts, err = c.prompts.position(); err != nil {
		return nil, s, err
	}
	if c.ref != nil {
		if !c.ref.Shared {
			if st.Extra[ReferenceExtra], err = stateFloats(c.ref.Model.Params(), view); err != nil {
				return nil, s, err
			}
		}
		syncs := c.ref.Syncs
		s.RefSyncs = &syncs
	}
	return st, s, nil
}

// checkCore validates the shared state of a checkpoint against this trainer without changing it.
func (c *rolloutTrainer) checkCore(st *checkpoint.State, path, kind string, cfg any) (savedState, error) {
	s, err := checkState(st, path, kind, c.policy, cfg)
	if err != nil {
		return s, err
	}
	if err := rng.New(1).SetState(st.RNG); err != nil {
		return s, fmt.Errorf("%s: sampling RNG: %w", path, err)
	}
	if c.ref != nil && !c.ref.Shared {
		p, ok := st.Extra[ReferenceExtra]
		switch {
		case !ok || s.RefSyncs == nil:
			return s, fmt.Errorf("%s: no reference model (extra %q) to resume from", path, ReferenceExtra)
		case len(p) != c.policy.NumParams():
			return s, fmt.Errorf("%s: extra %q has %d values, the model %d", path, ReferenceExtra, len(p), c.policy.NumParams())
		}
	}
	return s, nil
}

// restoreCore applies a checked state: parameters, moments, RNG, reference, counters and the
// prompt position.
func (c *rolloutTrainer) restoreCore(st *checkpoint.State, path string, s savedState) error {
	if err := c.policy.SetStateParams(st.Params); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := restoreOpt(c.opt, st.AdamM, st.AdamV, s.AdamStep); err != nil {
		return fmt.Errorf("%s: optimizer: %w", path, err)
	}
	if err := c.rng.SetState(st.RNG); err != nil {
		return fmt.Errorf("%s: sampling RNG: %w", path, err)
	}
	if c.ref != nil {
		if !c.ref.Shared {
			if err := setParams(c.ref.Model, st.Extra[ReferenceExtra]); err != nil {
				return fmt.Errorf("%s: reference: %w", path, err)
			}
		}
		if s.RefSyncs != nil {
			c.ref.Syncs = *s.RefSyncs
		}
	}
	if err := restoreScaler(c.scaler, s.LossScale, path); err != nil {
		return err
	}
	c.step, c.stopped, c.numTokens = s.Step, s.Stopped, s.NumTokens
	if err := c.prompts.restore(s.Prompts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Checkpoint returns the trainer's whole state: policy parameters and AdamW moments, the
// reference model, the sampling RNG, the step, the prompt position and the config. A trainer
// built the same way and given it by Restore continues bit for bit on the CPU. Callers may add
// their own Meta entries before checkpoint.Save.
func (t *GRPOTrainer) Checkpoint() (*checkpoint.State, error) { return t.checkpoint(false) }

// CheckpointView is Checkpoint whose floats may be the trainer's own memory on the CPU: no
// second copy of the model and moments, valid only until the next step or Restore. Write it
// out at once.
func (t *GRPOTrainer) CheckpointView() (*checkpoint.State, error) { return t.checkpoint(true) }

func (t *GRPOTrainer) checkpoint(view bool) (*checkpoint.State, error) {
	st, s, err := t.checkpointState("grpo", t.Config, view)
	if err != nil {
		return nil, err
	}
	return st, putState(st, s)
}

// Save writes Checkpoint to path atomically.
func (t *GRPOTrainer) Save(path string) error {
	st, err := t.CheckpointView()
	if err != nil {
		return err
	}
	return checkpoint.Save(path, st)
}

// Restore continues from a checkpoint written by Save (or Checkpoint) into a trainer built with
// the same model shape, config (the number of steps may differ) and prompt source, freshly
// made. path names the file in errors. Nothing changes when the checkpoint does not fit.
func (t *GRPOTrainer) Restore(st *checkpoint.State, path string) error {
	s, err := t.checkCore(st, path, "grpo", t.Config)
	if err != nil {
		return err
	}
	return t.restoreCore(st, path, s)
}

// Checkpoint is GRPOTrainer.Checkpoint plus the value head (parameters, config and its own
// AdamW moments) and the KL controller's coefficient.
func (t *PPOTrainer) Checkpoint() (*checkpoint.State, error) { return t.checkpoint(false) }

// CheckpointView is Checkpoint whose floats may be the trainer's own memory on the CPU (see
// GRPOTrainer.CheckpointView).
func (t *PPOTrainer) CheckpointView() (*checkpoint.State, error) { return t.checkpoint(true) }

func (t *PPOTrainer) checkpoint(view bool) (*checkpoint.State, error) {
	st, s, err := t.checkpointState("ppo", t.Config, view)
	if err != nil {
		return nil, err
	}
	if err := t.SaveValueHead(st); err != nil {
		return nil, err
	}
	if st.Extra[ValueHeadAdamM], err = t.Value.Opt.M.ToHost(); err != nil {
		return nil, err
	}
	if st.Extra[ValueHeadAdamV], err = t.Value.Opt.V.ToHost(); err != nil {
		return nil, err
	}
	s.ValueAdamStep = t.Value.Opt.Step
	coef := t.KL.Value()
	s.KLCoef = &coef
	return st, putState(st, s)
}

// Save writes Checkpoint to path atomically.
func (t *PPOTrainer) Save(path string) error {
	st, err := t.CheckpointView()
	if err != nil {
		return err
	}
	return checkpoint.Save(path, st)
}

// CoefSetter is a KLController whose coefficient can be restored from a checkpoint; FixedKL
// and AdaptiveKL are.
type CoefSetter interface {
	SetCoef(float64)
}

// Restore is GRPOTrainer.Restore for PPO, with the value head, its optimizer and the KL
// controller.
func (t *PPOTrainer) Restore(st *checkpoint.State, path string) error {
	s, err := t.checkCore(st, path, "ppo", t.Config)
	if err != nil {
		return err
	}
	n := t.Value.C + 1
	for _, k := range []string{ValueHeadExtra, ValueHeadAdamM, ValueHeadAdamV} {
		if v, ok := st.Extra[k]; !ok || len(v) != n {
			return fmt.Errorf("%s: extra %q: %d values (present %v), the value head needs %d", path, k, len(v), ok, n)
		}
	}
	if s.KLCoef == nil {
		return fmt.Errorf("%s: meta %q has no kl_coef", path, MetaState)
	}
	ks, ok := t.KL.(CoefSetter)
	if !ok && *s.KLCoef != t.KL.Value() {
		return fmt.Errorf("%s: the KL controller %T cannot restore the saved coefficient %v", path, t.KL, *s.KLCoef)
	}
	if err := t.restoreCore(st, path, s); err != nil {
		return err
	}
	if err := t.Value.SetParams(st.Extra[ValueHeadExtra]); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := restoreOpt(t.Value.Opt, st.Extra[ValueHeadAdamM], st.Extra[ValueHeadAdamV], s.ValueAdamStep); err != nil {
		return fmt.Errorf("%s: value head optimizer: %w", path, err)
	}
	if ok {
		ks.SetCoef(*s.KLCoef)
	}
	return nil
}

// Checkpoint returns the supervised trainer's state: parameters, AdamW moments, step, prompt
// position and config.
func (t *SFTTrainer) Checkpoint() (*checkpoint.State, error) { return t.checkpoint(false) }

// CheckpointView is Checkpoint whose floats may be the trainer's own memory on the CPU (see
// GRPOTrainer.CheckpointView).
func (t *SFTTrainer) CheckpointView() (*checkpoint.State, error) { return t.checkpoint(true) }

func (t *SFTTrainer) checkpoint(view bool) (*checkpoint.State, error) {
	st, err := newState("sft", t.Model, t.Opt, t.Step, t.Config.LR, t.Config, view)
	if err != nil {
		return nil, err
	}
	s := savedState{Step: t.Step, AdamStep: t.Opt.Step, LossScale: savedScaler(t.scaler)}
	if s.Prompts, err = t.src.position(); err != nil {
		return nil, err
	}
	return st, putState(st, s)
}

// Save writes Checkpoint to path atomically.
func (t *SFTTrainer) Save(path string) error {
	st, err := t.Checkpoint()
	if err != nil {
		return err
	}
	return checkpoint.Save(path, st)
}

// Restore continues from a checkpoint written by Save into a trainer built with the same model
// shape, config (the number of steps may differ) and prompt source, freshly made.
func (t *SFTTrainer) Restore(st *checkpoint.State, path string) error {
	s, err := checkState(st, path, "sft", t.Model, t.Config)
	if err != nil {
		return err
	}
	if err := t.Model.SetStateParams(st.Params); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := restoreOpt(t.Opt, st.AdamM, st.AdamV, s.AdamStep); err != nil {
		return fmt.Errorf("%s: optimizer: %w", path, err)
	}
	if err := restoreScaler(t.scaler, s.LossScale, path); err != nil {
		return err
	}
	t.Step = s.Step
	if err := t.src.restore(s.Prompts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// SavedKind returns the kind of trainer ("grpo", "ppo", "sft") that wrote a checkpoint, "" when
// it holds no RL trainer state.
func SavedKind(st *checkpoint.State) string { return st.Meta[MetaTrainer] }
