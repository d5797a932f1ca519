package optim

import (
	"fmt"
	"math"
)

// Settings are the optimizer options a training run chooses, shared by every trainer (nn/train,
// rl's GRPO, PPO and SFT trainers embed them, so their JSON names are the same everywhere):
// AdamW's weight decay and gradient clipping, and a cosine learning-rate schedule.
type Settings struct {
	// LR is the peak learning rate; MinLR the end of its cosine decay (MinLR = LR: constant).
	LR    float64 `json:"lr"`
	MinLR float64 `json:"min_lr"`
	// Warmup is the number of steps of linear learning-rate warmup.
	Warmup int `json:"warmup"`
	// WeightDecay is AdamW's decoupled weight decay.
	WeightDecay float64 `json:"weight_decay"`
	// MaxGradNorm clips the global gradient norm before each update; 0 disables.
	MaxGradNorm float64 `json:"max_grad_norm"`
}

// Schedule is the learning rate over a run of steps.
func (s Settings) Schedule(steps int) Cosine {
	return Cosine{MaxLR: float32(s.LR), MinLR: float32(s.MinLR), Warmup: s.Warmup, Total: steps}
}

// AdamW is the optimizer's configuration: llm.c's betas and epsilon with the run's decay and
// clipping.
func (s Settings) AdamW() AdamWConfig {
	a := DefaultAdamW()
	a.WeightDecay, a.MaxGradNorm = float32(s.WeightDecay), float32(s.MaxGradNorm)
	return a
}

// Validate names the first bad setting for a run of steps, by its command-line flag (a
// command prefixes "--").
func (s Settings) Validate(steps int) error {
	switch {
	case math.IsInf(s.WeightDecay, 0) || math.IsNaN(s.WeightDecay) || s.WeightDecay < 0:
		return fmt.Errorf("weight-decay %v must be a finite number >= 0", s.WeightDecay)
	case math.IsInf(s.MaxGradNorm, 0) || math.IsNaN(s.MaxGradNorm) || s.MaxGradNorm < 0:
		return fmt.Errorf("clip (max_grad_norm) %v must be a finite number >= 0 (0: no clipping)", s.MaxGradNorm)
	}
	if err := s.Schedule(steps).Validate(); err != nil {
		return err
	}
	return s.AdamW().Validate()
}
