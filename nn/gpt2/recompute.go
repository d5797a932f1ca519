package gpt2

import "github.com/vkgrad/vkgrad/tensor"

// recomputed are the value regions every layer shares with recompute: its ln1 and ln2 outputs
// and its GELU output, written by each layer's forward and read by its next op only.
type recomputed struct {
	ln1, ln2, fchGelu *tensor.Tensor
}

// layerRecompute are the backward steps that rewrite one layer's shared values just before the
// op whose backward reads them: ln1 before the qkv product's, ln2 before the fc product's and
// the GELU output before the fcproj product's.
type layerRecompute struct {
	ln1, ln2, gelu func()
}

// recomputeSteps are layer l's recompute steps on be, made once per layout so that recording
// them every step allocates nothing. Each replays the very backend call of the forward on the
// same stored inputs, so it writes the same bits: a fused residual layernorm rewrites its
// residual sum, mean and rstd with the values they already hold.
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
	BT, C := a.B*a.T, m.Config.Channels
	la := &a.layers[l]
	// The weights are looked up when the step runs: EnableGrads makes new views of them.
	ln1 := func() {
		lp := &m.layers[l]
		be.LayerNormForward(la.ln1.Value, la.ln1Mean, la.ln1Rstd, a.encoded.Value, lp.ln1w.Value, lp.ln1b.Value, BT, C)
	}
	if l > 0 { // the previous layer's closing residual sum and layernorm, fused
		prev := &a.layers[l-1]
		ln1 = func() {
			lp := &m.layers[l]
			be.ResidualLayerNormForward(prev.residual3.Value, la.ln1.Value, la.ln1Mean, la.ln1Rstd,
				prev.residual2.Value, prev.fcproj.Value, lp.ln1w.Value, lp.ln1b.Value, BT, C)
		}
	}
	residual := a.encoded // the stream entering layer l
	if l > 0 {
		residual = a.layers[l-1].residual3
	}
	return layerRecompute{
		ln1: ln1,
		ln2: func() {
			lp := &m.layers[l]
			be.ResidualLayerNormForward(la.residual2.Value, la.ln2.Value, la.ln2Mean, la.ln2Rstd,
				residual.Value, la.attproj.Value, lp.ln2w.Value, lp.ln2b.Value, BT, C)
		},
		// MatMul's GeluOut holds GeluForward's bits (tensor.Backend.MatMul).
		gelu: func() { be.GeluForward(la.fchGelu.Value, la.fch.Value) },
	}
}
