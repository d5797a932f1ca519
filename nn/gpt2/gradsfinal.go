package gpt2

import "github.com/vkgrad/vkgrad/autograd"

// Data-parallel training sums each micro-batch's gradients across processes. A range of the
// flat gradient buffer can be summed as soon as the backward pass has written it for the last
// time, while the rest of the pass goes on. The backward pass runs the layers from the last to
// the first, so layer l's weights are final once its backward has run, and so is the layernorm
// after it (the next layer's ln1, or lnf), which the same fused op writes. The embeddings (wte,
// tied to the head, gets its last addition from the encoder) and layer 0's ln1 are final only
// when Backward returns.

// OnGradsFinal sets f to be called during each later Backward, once a layer's backward has run,
// with the ranges (offset, length) of the flat gradient buffer that the pass will not write
// again, in a fixed order; nil removes it. Ranges never reported are final when Backward
// returns. It takes effect from the next forward pass, which places the calls.
func (m *Model) OnGradsFinal(f func(ranges [][2]int)) { m.gradsFinal = f }

// recordGradsFinal places, before layer l's forward, the report that its weights are final: the
// tape runs it after every op recorded later, layer l's included.
func (m *Model) recordGradsFinal(tp *autograd.Tape, l int) {
	f := m.gradsFinal
	if f == nil || !tp.Recording() {
		return
	}
	ranges := m.Config.gradsFinalAfterLayer(l)
	final := m.layers[l].vars()
	if l+1 < len(m.layers) {
		final = append(final, m.layers[l+1].ln1w, m.layers[l+1].ln1b)
	} else {
		final = append(final, m.lnfw, m.lnfb)
	}
	tp.Record(func() {
		for _, v := range final { // a gradient still marked zero (BackwardFromZero) is zero
			v.SettleGrad()
		}
		f(ranges)
	})
}

// gradsFinalAfterLayer are the ranges (offset, length) of the flat buffer that layer l's
// backward writes for the last time, in buffer order.
func (c Config) gradsFinalAfterLayer(l int) [][2]int {
	L := c.NumLayers
	var out [][2]int
	off := 0
	for _, s := range c.ParamSpecs() {
		n := s.Numel()
		switch s.Name {
		case "wte", "wpe":
		case "lnfw", "lnfb":
			if l == L-1 {
				out = append(out, [2]int{off, n})
			}
		case "ln1w", "ln1b":
			if l+1 < L {
				out = append(out, [2]int{off + (l+1)*n/L, n / L})
			}
		default:
			out = append(out, [2]int{off + l*n/L, n / L})
		}
		off += n
	}
	return out
}
