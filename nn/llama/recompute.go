package llama

import (
	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// recomputed are the value regions every layer shares with recompute: its input-norm and
// MLP-norm outputs and its SwiGLU product, written by each layer's forward and read by the
// products (and adapters) right after them only.
type recomputed struct {
	h1, h2, act *tensor.Tensor
}

// layerRecompute are the backward steps that rewrite one layer's shared values just before the
// ops whose backward reads them: h1 before the q, k and v projections', h2 before the gate and
// up projections' and the SwiGLU product before the down projection's.
type layerRecompute struct {
	h1, h2, act func()
}

// recordRecompute places step, which rewrites a shared value (Model.Recompute), right after
// the last op that reads it: the tape runs it just before those ops' backward.
func recordRecompute(tp *autograd.Tape, recompute bool, step func()) {
	if recompute {
		tp.Record(step)
	}
}

// recomputeSteps are layer l's recompute steps, made once per layout and model so that
// recording them every step allocates nothing. Each replays the very backend call of the
// forward on the same stored inputs, so it writes the same bits: a fused residual RMSNorm
// rewrites its residual sum and rstd with the values they already hold.
func (m *Model) recomputeSteps(l int) layerRecompute {
	a := m.acts
	if a.recomputes == nil || a.recomputesOf != m { // a peer's steps read the peer's weights
		a.recomputesOf = m
		a.recomputes = make([]layerRecompute, len(a.layers))
		for i := range a.recomputes {
			a.recomputes[i] = m.newRecomputeSteps(i)
		}
	}
	return a.recomputes[l]
}

func (m *Model) newRecomputeSteps(l int) layerRecompute {
	a, be := m.acts, m.Backend
	N, C := a.B*a.T, m.Config.Hidden
	eps := float32(m.Config.RMSNormEps)
	la := &a.layers[l]
	// The weights are looked up when the step runs: enabling gradients makes new views of them.
	h1 := func() {
		be.RMSNormForward(la.h1.Value, la.rstd1, a.embedded.Value, m.layers[l].attnNorm.Value, N, C, eps)
	}
	residual := a.embedded // the stream entering layer l
	if l > 0 {             // the previous layer's closing residual sum and norm, fused
		prev := &a.layers[l-1]
		residual = prev.x3
		h1 = func() {
			be.ResidualRMSNormForward(prev.x3.Value, la.h1.Value, la.rstd1, prev.x2.Value, prev.down.Value, m.layers[l].attnNorm.Value, N, C, eps)
		}
	}
	return layerRecompute{
		h1: h1,
		h2: func() {
			be.ResidualRMSNormForward(la.x2.Value, la.h2.Value, la.rstd2, residual.Value, la.o.Value, m.layers[l].mlpNorm.Value, N, C, eps)
		},
		act: func() { be.SwiGLUForward(la.act.Value, la.gate.Value, la.up.Value, la.act.Value.Numel()) },
	}
}
