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
		fill(la.ln1, la.residual3) // the backward clears the layer-shared ones itself
	}
}

// headBudget bounds the floats of one chunk of the selected head's logits: 16M floats (64 MiB),
// about 330 rows of GPT-2's padded vocabulary, so the head of a few thousand completion tokens
// takes a few chunks instead of a (rows, Vp) buffer and its gradient.
const headBudget = 16 << 20

// headChunkRows is the number of rows the selected head computes at a time: HeadChunkRows
// when set, else what fits headBudget.
func (m *Model) headChunkRows(n int) int { return m.Config.headChunkRows(n, m.HeadChunkRows) }

// headChunkRows is rows when positive (at most n), else the rows of n that fit headBudget.
func (c Config) headChunkRows(n, rows int) int {
	if rows > 0 {
		return min(n, rows)
	}
	return max(1, min(n, headBudget/c.PaddedVocabSize))
}

// SelectedHead computes log-probs and entropies at chosen positions of the last ForwardTrunk:
// it gathers those rows of the hidden states and runs the lm head and LogSoftmaxGather on them
// a chunk of rows at a time (headChunkRows), so no (rows, Vp) logits exist; the backward
// recomputes each chunk's logits. Its buffers grow to the largest selection seen and are reused.
type SelectedHead struct {
	m               *Model
	cap, rows       int
	hidden          *autograd.Var
	logp, entropy   *autograd.Var
	targets         *tensor.Tensor
	cutoff          *tensor.Tensor // float32, allocated on the first truncated Forward
	logits, dlogits *tensor.Tensor // (rows, Vp) chunk scratch; dlogits only with gradients
	hostT           []int32
	withGrad        bool
}

// NewSelectedHead returns a head for m.
func (m *Model) NewSelectedHead() *SelectedHead { return &SelectedHead{m: m} }

func (h *SelectedHead) ensure(n int, withGrad bool) error {
	rows := h.m.headChunkRows(n)
	if n <= h.cap && rows <= h.rows && (h.withGrad || !withGrad) {
		return nil
	}
	withGrad = withGrad || h.withGrad
	size, rows := max(n, h.cap), max(rows, h.rows)
	h.Free()
	be, C, Vp := h.m.Backend, h.m.Config.Channels, h.m.Config.PaddedVocabSize
	var err error
	if h.hidden, err = autograd.NewVar(be, withGrad, size, C); err != nil {
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
	if h.logits, err = tensor.New(be, tensor.Float32, rows, Vp); err != nil {
		return err
	}
	if withGrad {
		if h.dlogits, err = tensor.New(be, tensor.Float32, rows, Vp); err != nil {
			return err
		}
	}
	h.cap, h.rows, h.withGrad = size, rows, withGrad
	return nil
}

// Free releases the head's buffers.
func (h *SelectedHead) Free() {
	be := h.m.Backend
	for _, v := range []*autograd.Var{h.hidden, h.logp, h.entropy} {
		if v == nil {
			continue
		}
		be.Free(v.Value.Storage)
		if v.Grad != nil {
			be.Free(v.Grad.Storage)
		}
	}
	for _, t := range []*tensor.Tensor{h.targets, h.cutoff, h.logits, h.dlogits} {
		if t != nil {
			be.Free(t.Storage)
		}
	}
	h.hidden, h.logp, h.entropy, h.targets, h.cutoff, h.logits, h.dlogits = nil, nil, nil, nil, nil, nil, nil
	h.cap, h.rows = 0, 0
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
	logp, entropy = h.logp.View(0, n), h.entropy.View(0, n)
	if tp.Recording() {
		be.Fill(logp.Grad, 0)
		be.Fill(entropy.Grad, 0)
	}
	for r0 := 0; r0 < n; r0 += h.rows {
		R := min(h.rows, n-r0)
		logits := h.chunkLogits(hid, r0, R)
		be.LogSoftmaxGather(logp.Value.View(r0, R), entropy.Value.View(r0, R), logits, tgt.View(r0, R), viewOrNil(cut, r0, R), R, V, Vp, temperature)
	}
	if tp.Recording() {
		tp.Record(func() { h.backward(hid, logp, entropy, tgt, cut, n, temperature) })
	}
	return logp, entropy, nil
}

// chunkLogits computes the logits of gathered rows r0..r0+R-1 into the chunk scratch.
func (h *SelectedHead) chunkLogits(hid *autograd.Var, r0, R int) *tensor.Tensor {
	m := h.m
	C, Vp := m.Config.Channels, m.Config.PaddedVocabSize
	logits := h.logits.View(0, R, Vp)
	m.Backend.MatMul(logits, hid.Value.View(r0*C, R, C), m.wte.Value, nil, tensor.MatMulParams{M: R, N: Vp, K: C, TransB: true})
	return logits
}

// backward recomputes each chunk's logits and accumulates the gradients of the gathered hidden
// states and of wte, chunk after chunk.
func (h *SelectedHead) backward(hid, logp, entropy *autograd.Var, tgt, cut *tensor.Tensor, n int, temperature float32) {
	m := h.m
	be, C, V, Vp := m.Backend, m.Config.Channels, m.TokenVocab(), m.Config.PaddedVocabSize
	for r0 := 0; r0 < n; r0 += h.rows {
		R := min(h.rows, n-r0)
		logits := h.chunkLogits(hid, r0, R)
		dlogits := h.dlogits.View(0, R, Vp)
		be.Fill(dlogits, 0)
		be.LogSoftmaxGatherBackward(dlogits, logits, tgt.View(r0, R), viewOrNil(cut, r0, R), logp.Grad.View(r0, R), entropy.Grad.View(r0, R), R, V, Vp, temperature)
		be.MatMul(hid.Grad.View(r0*C, R, C), dlogits, m.wte.Value, nil, tensor.MatMulParams{M: R, N: C, K: Vp, Accumulate: true})
		be.MatMul(m.wte.Grad, dlogits, hid.Value.View(r0*C, R, C), nil, tensor.MatMulParams{M: Vp, N: C, K: R, TransA: true, Accumulate: !m.wte.TakeGradZero()})
	}
}

func viewOrNil(t *tensor.Tensor, off, n int) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return t.View(off, n)
}

// Hidden returns the gathered hidden states (len(positions), C) of the last Forward: the input
// of a value head at the same positions.
func (h *SelectedHead) Hidden(n int) *autograd.Var { return h.hidden.View(0, n, h.m.Config.Channels) }
