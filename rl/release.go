package rl

import "runtime/debug"

// activationReleaser is a model that can give back its forward pass's buffers between steps.
type activationReleaser interface{ ReleaseActivations() }

// releaseActivations frees the forward passes' buffers (the policy's activations, which the
// reference shares, and the selected heads' chunks) before the rollout's decoder takes its
// key/value cache, so the two never coexist: the next update lays them out again.
func (c *core) releaseActivations() {
	for _, m := range []*model{c.pol, c.refm} {
		if m == nil {
			continue
		}
		if r, ok := unwrap(m.Policy).(activationReleaser); ok {
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
