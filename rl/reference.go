package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn"
)

// Reference is a frozen copy of the policy: a second model with the same parameters and no
// gradients. Before the first update its log-probs equal the policy's bitwise (same kernels,
// same inputs), so the KL starts at exactly 0.
type Reference struct {
	Model nn.LM
	// Syncs counts how many times the reference has been moved toward the policy.
	Syncs int
	// Shared says the reference is the policy's own base model with its LoRA adapters off: it
	// takes no memory of its own, is not saved in checkpoints and cannot be synced.
	Shared bool
}

// NewReference copies policy's parameters into a new model on the same backend, or for a LoRA
// policy shares its base with the adapters off.
func NewReference(policy nn.LM) (*Reference, error) {
	m, shared, err := policy.Reference()
	if err != nil {
		return nil, fmt.Errorf("reference model: %w", err)
	}
	return &Reference{Model: m, Shared: shared}, nil
}

// Sync moves the reference toward the policy: ref = alpha*policy + (1-alpha)*ref, blended on
// the host in float32; alpha 1 copies the policy exactly (TRL's ref_model_mixup_alpha).
func (r *Reference) Sync(policy nn.LM, alpha float64) error {
	if !(alpha > 0 && alpha <= 1) {
		return fmt.Errorf("ref_mix_alpha %v: want a value in (0, 1]", alpha)
	}
	if r.Shared {
		return fmt.Errorf("the reference is the LoRA model's base: it cannot be synced (ref_sync_every must be 0)")
	}
	p, err := paramsToHost(policy)
	if err != nil {
		return err
	}
	if alpha < 1 {
		q, err := paramsToHost(r.Model)
		if err != nil {
			return err
		}
		a := float32(alpha)
		for i := range p {
			p[i] = a*p[i] + (1-a)*q[i]
		}
	}
	if err := setParams(r.Model, p); err != nil {
		return err
	}
	r.Syncs++
	return nil
}
