package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// ZeroTrunkGrads clears the gradients of the trunk's activations (what ForwardTrunk records),
// leaving the full-width logits' gradient untouched: cheaper than ZeroActGrads.
func (m *Model) ZeroTrunkGrads() {
	a := m.acts
	if a == nil || a.grads == nil {
		return
	}
	be := m.Backend
	fill := func(vs ...*autograd.Var) {
		for _, v := range vs {
			if v.Grad != nil {
				be.Fill(v.Grad, 0)
			}
		}
	}
	fill(a.encoded, a.lnf)
	for i := range a.layers {
		la := &a.layers[i]
		fill(la.ln1, la.qkv, la.atty, la.attproj, la.residual2, la.ln2, la.fch, la.fchGelu, la.fcproj, la.residual3)
	}
}

// SelectedHead computes log-probs and entropies at chosen positions of the last ForwardTrunk:
// it gathers those rows of the hidden states, runs the lm head on them and LogSoftmaxGather.
// Its buffers grow to the largest selection seen and are reused.
type SelectedHead struct {
	m              *Model
	cap            int
	hidden, logits *autograd.Var
	logp, entropy  *autograd.Var
	targets        *tensor.Tensor
	cutoff         *tensor.Tensor // float32, allocated on the first truncated Forward
	hostT          []int32
	withGrad       bool
}

// NewSelectedHead returns a head for m.
func (m *Model) NewSelectedHead() *SelectedHead { return &SelectedHead{m: m} }

func (h *SelectedHead) ensure(n int, withGrad bool) error {
	if n <= h.cap && (h.withGrad || !withGrad) {
		return nil
	}
	h.Free()
	be, C, Vp := h.m.Backend, h.m.Config.Channels, h.m.Config.PaddedVocabSize
	var err error
	size := max(n, h.cap)
	if h.hidden, err = autograd.NewVar(be, withGrad, size, C); err != nil {
		return err
	}
	if h.logits, err = autograd.NewVar(be, withGrad, size, Vp); err != nil {
		return err
	}
	if h.logp, err = autograd.NewVar(be, withGrad, size); err != nil {
		return err
	}
	if h.entropy, err = autograd.NewVar(be, withGrad, size); err != nil {
		return err
	}
	if h.targets, err = tensor.New(be, tensor.Int32, size); err != nil {
		return err
	}
	h.cap, h.withGrad = size, withGrad
	return nil
}

// Free releases the head's buffers.
func (h *SelectedHead) Free() {
	be := h.m.Backend
	for _, v := range []*autograd.Var{h.hidden, h.logits, h.logp, h.entropy} {
		if v == nil {
			continue
		}
		be.Free(v.Value.Storage)
		if v.Grad != nil {
			be.Free(v.Grad.Storage)
		}
	}
	for _, t := range []*tensor.Tensor{h.targets, h.cutoff} {
		if t != nil {
			be.Free(t.Storage)
		}
	}
	h.hidden, h.logits, h.logp, h.entropy, h.targets, h.cutoff, h.cap = nil, nil, nil, nil, nil, nil, 0
}

// Forward returns, for each k, the log-prob of targets[k] at flat position positions[k] (an
// index into the last ForwardTrunk's B*T rows) under softmax(logits/temperature), and the
// entropy there. The Vars (len(positions)) are reused by the next call; seed their Grad and
// run the tape to back-propagate into the trunk (after ZeroTrunkGrads).
//
// cutoffs, when not nil (one per position), replays a top-k/top-p sampler's truncation as
// Model.LogProbs does: position k's distribution keeps the tokens whose logit is at least
// cutoffs[k] (and targets[k]), renormalised, and the entropy is that of the truncated
// distribution; -Inf keeps every token.
func (h *SelectedHead) Forward(tp *autograd.Tape, positions []int, targets []int32, cutoffs []float32, temperature float32) (logp, entropy *autograd.Var, err error) {
	m := h.m
	a := m.acts
	if a == nil {
		return nil, nil, fmt.Errorf("gpt2: SelectedHead needs a ForwardTrunk first")
	}
	n := len(positions)
	if n == 0 || len(targets) != n {
		return nil, nil, fmt.Errorf("gpt2: %d positions and %d targets; want the same positive number", n, len(targets))
	}
	if !(temperature > 0) || temperature > 1e30 {
		return nil, nil, fmt.Errorf("gpt2: temperature %v must be positive and finite", temperature)
	}
	N := a.B * a.T
	for k, p := range positions {
		if p < 0 || p >= N {
			return nil, nil, fmt.Errorf("gpt2: positions[%d] = %d outside the %d positions of the last forward", k, p, N)
		}
	}
	if err := m.checkTargets(targets, 1, n); err != nil {
		return nil, nil, err
	}
	if err := h.ensure(n, tp.Recording()); err != nil {
		return nil, nil, fmt.Errorf("gpt2: allocating the selected head for %d positions: %w", n, err)
	}
	cut, err := m.uploadCutoffs(&h.cutoff, cutoffs, n)
	if err != nil {
		return nil, nil, err
	}
	be, C, V, Vp := m.Backend, m.Config.Channels, m.TokenVocab(), m.Config.PaddedVocabSize
	h.hostT = append(h.hostT[:0], targets...)
	tgt := h.targets.View(0, n)
	if err := be.UploadInt32(tgt, h.hostT); err != nil {
		return nil, nil, err
	}
	hid := h.hidden.View(0, n, C)
	autograd.GatherRows(tp, hid, a.lnf, positions, C)
	logits := h.logits.View(0, n, Vp)
	autograd.MatMul(tp, logits, hid, m.wte, nil, tensor.MatMulParams{M: n, N: Vp, K: C, TransB: true})
	logp, entropy = h.logp.View(0, n), h.entropy.View(0, n)
	if tp.Recording() {
		be.Fill(logits.Grad, 0)
		be.Fill(logp.Grad, 0)
		be.Fill(entropy.Grad, 0)
	}
	autograd.LogSoftmaxGather(tp, logp, entropy, logits, tgt, cut, n, V, Vp, temperature)
	return logp, entropy, nil
}

// Hidden returns the gathered hidden states (len(positions), C) of the last Forward: the input
// of a value head at the same positions.
func (h *SelectedHead) Hidden(n int) *autograd.Var { return h.hidden.View(0, n, h.m.Config.Channels) }
