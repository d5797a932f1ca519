package rl

import (
	"fmt"
	"runtime/debug"
)

// activationReleaser is a model that can give back its forward pass's buffers between steps.
type activationReleaser interface{ ReleaseActivations() }

// activationReserver is a model that can lay out its activations for the largest pass ahead.
type activationReserver interface{ ReserveActivations(B, T int) error }

// reserveActivations lays out the policy's activations (with gradients) for sb's largest
// micro-batch before its passes, which then all reuse them: passes growing them one after
// another would leave each smaller layout behind for the collector.
func (c *rolloutTrainer) reserveActivations(sb *seqBatch) error {
	r, ok := unwrap(c.policy).(activationReserver)
	if !ok {
		return nil
	}
	B, T := 0, 0
	for _, mb := range sb.mbs {
		B, T = max(B, mb.B), max(T, mb.T)
	}
	if err := r.ReserveActivations(B, T); err != nil {
		return fmt.Errorf("activations for %d rows of %d positions: %w", B, T, err)
	}
	return nil
}

// releaseActivations frees the forward passes' buffers (the policy's activations, which the
// reference shares, and the selected heads' chunks) before the rollout's decoder takes its
// key/value cache, so the two never coexist: the next update lays them out again.
func (c *rolloutTrainer) releaseActivations() {
	for _, m := range []*model{c.pol, c.refm} {
		if m == nil {
			continue
		}
		if r, ok := unwrap(m.LM).(activationReleaser); ok {
			r.ReleaseActivations()
		}
		m.head.Free()
	}
	returnFreed()
}

// returnFreed hands the host memory of freed buffers back to the operating system at once: on
// the CPU backend they are Go slices, which the collector would otherwise reclaim only once the
// heap had grown to twice what is live, so the decoder's and the activations' turns would
// stack up in the resident set. A collection costs milliseconds: the big buffers hold no
// pointers to scan.
func returnFreed() { debug.FreeOSMemory() }
