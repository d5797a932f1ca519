package rl

import "time"

// Phase names a part of an RL step that a PhaseTimer is told about.
type Phase string

// The phases of a step, in the order they run.
const (
	// PhaseRollout samples the completions: prefilling the prompts and decoding.
	PhaseRollout Phase = "rollout"
	// PhaseReward scores the completions.
	PhaseReward Phase = "reward"
	// PhaseOldLogp is PPO's pass of the policy before its updates (log-probs and values). GRPO
	// has none: its old log-probs are the first update's forward pass.
	PhaseOldLogp Phase = "old_logprobs"
	// PhaseReference is the reference model's pass.
	PhaseReference Phase = "reference"
	// PhaseUpdate is an update's forward and backward passes (one per update).
	PhaseUpdate Phase = "update"
	// PhaseOptimizer is an update's AdamW step (one per applied update).
	PhaseOptimizer Phase = "optimizer"
)

// PhaseTimer is told how long each phase of a step took, as often as the phase runs (a
// benchmark's breakdown of a step).
type PhaseTimer interface {
	Phase(p Phase, d time.Duration)
}

// SetPhaseTimer has the trainer tell pt the time of each phase of its steps; nil stops it.
// While a timer is set, each phase ends by waiting for the device, so that work a phase
// queues is charged to it and not to the next.
func (c *rolloutTrainer) SetPhaseTimer(pt PhaseTimer) { c.timer = pt }

// timed starts timing phase p and returns the function that ends it; both do nothing without
// a timer.
func (c *rolloutTrainer) timed(p Phase) func() {
	if c.timer == nil {
		return func() {}
	}
	start := time.Now()
	return func() {
		// A failed sync is the device's error, which the step's next download reports.
		_ = c.policy.Backend().Sync()
		c.timer.Phase(p, time.Since(start))
	}
}
