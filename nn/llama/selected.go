package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// SelectedHead computes log-probs and entropies at chosen positions of the last ForwardTrunk,
// the quantities RL losses need. It gathers those rows of the final hidden states and runs the
// lm head and LogSoftmaxGather on them a chunk of rows at a time (selectedChunkRows), so a 152k
// vocabulary never needs more than one chunk of logits; the backward recomputes each chunk.
// Its buffers grow to the largest selection seen and are reused.
type SelectedHead struct {
	m               *Model
	cap, rows       int
	hidden          *autograd.Var
	logp, entropy   *autograd.Var
	targets, cutoff *tensor.Tensor
	logits, dlogits *tensor.Tensor // (rows, V) chunk scratch
	hostT           []int32
	withGrad        bool
}

// NewSelectedHead returns a head for m.
func (m *Model) NewSelectedHead() *SelectedHead { return &SelectedHead{m: m} }

// ZeroTrunkGrads clears the gradients of the activations ForwardTrunk records.
func (m *Model) ZeroTrunkGrads() {
	if m.acts != nil {
		m.acts.zeroGrads(m.Backend)
	}
}

func (h *SelectedHead) ensure(n int, withGrad bool) error {
	rows := h.m.selectedChunkRows(n)
	if n <= h.cap && rows <= h.rows && (h.withGrad || !withGrad) {
		return nil
	}
	h.Free()
	be, C, V := h.m.Backend, h.m.Config.Hidden, h.m.Config.Vocab
	size := n
	al := &alloc{a: &activations{withGrad: withGrad}, be: be}
	h.hidden, h.logp, h.entropy = al.v(size, C), al.v(size), al.v(size)
	h.targets = al.t(tensor.Int32, size)
	h.logits = al.t(tensor.Float32, rows, V)
	if withGrad {
		h.dlogits = al.t(tensor.Float32, rows, V)
	}
	if al.err != nil {
		al.a.free(be)
		h.hidden, h.logp, h.entropy, h.targets, h.logits, h.dlogits = nil, nil, nil, nil, nil, nil
		return al.err
	}
	h.cap, h.rows, h.withGrad = size, rows, withGrad
	return nil
}

// Free releases the head's buffers.
func (h *SelectedHead) Free() {
	be := h.m.Backend
	for _, v := range []*autograd.Var{h.hidden, h.logp, h.entropy} {
		if v != nil {
			be.Free(v.Value.Storage)
			if v.Grad != nil {
				be.Free(v.Grad.Storage)
			}
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
// cutoffs, when not nil (one per position), replays a top-k/top-p sampler's truncation: position
// k's distribution keeps the tokens whose logit is at least cutoffs[k] (and targets[k]),
// renormalised; -Inf keeps every token.
func (h *SelectedHead) Forward(tp *autograd.Tape, positions []int, targets []int32, cutoffs []float32, temperature float32) (logp, entropy *autograd.Var, err error) {
	m := h.m
	a := m.acts
	if a == nil {
		return nil, nil, fmt.Errorf("llama: SelectedHead needs a ForwardTrunk first")
	}
	n := len(positions)
	if err := h.check(positions, targets, cutoffs, temperature, a.B*a.T); err != nil {
		return nil, nil, err
	}
	if err := h.ensure(n, tp.Recording()); err != nil {
		return nil, nil, fmt.Errorf("llama: allocating the selected head for %d positions: %w", n, err)
	}
	be := m.Backend
	tgt := h.targets.View(0, n)
	h.hostT = append(h.hostT[:0], targets...)
	if err := be.UploadInt32(tgt, h.hostT); err != nil {
		return nil, nil, err
	}
	cut, err := h.uploadCutoffs(cutoffs)
	if err != nil {
		return nil, nil, err
	}
	hid := h.gather(tp, positions)
	logp, entropy = h.logp.View(0, n), h.entropy.View(0, n)
	if tp.Recording() {
		be.Fill(logp.Grad, 0)
		be.Fill(entropy.Grad, 0)
	}
	for r0 := 0; r0 < n; r0 += h.rows {
		R := min(h.rows, n-r0)
		logits := h.chunkLogits(hid, r0, R)
		be.LogSoftmaxGather(logp.Value.View(r0, R), entropy.Value.View(r0, R), logits, tgt.View(r0, R), viewOrNil(cut, r0, R), R, m.TokenVocab(), m.Config.Vocab, temperature)
	}
	if tp.Recording() {
		tp.Record(func() { h.backward(hid, logp, entropy, tgt, cut, n, temperature) })
	}
	return logp, entropy, nil
}

func (h *SelectedHead) check(positions []int, targets []int32, cutoffs []float32, temperature float32, N int) error {
	n := len(positions)
	if n == 0 || len(targets) != n {
		return fmt.Errorf("llama: %d positions and %d targets; want the same positive number", n, len(targets))
	}
	if !(temperature > 0) || temperature > 1e30 {
		return fmt.Errorf("llama: temperature %v must be positive and finite", temperature)
	}
	for k, p := range positions {
		if p < 0 || p >= N {
			return fmt.Errorf("llama: positions[%d] = %d outside the %d positions of the last forward", k, p, N)
		}
	}
	if cutoffs != nil && len(cutoffs) != n {
		return fmt.Errorf("llama: %d cutoffs for %d positions", len(cutoffs), n)
	}
	for i, c := range cutoffs {
		if c != c {
			return fmt.Errorf("llama: cutoffs[%d] is NaN (-Inf keeps every token)", i)
		}
	}
	return h.m.checkTargets(targets, 1, n)
}

func (h *SelectedHead) uploadCutoffs(cutoffs []float32) (*tensor.Tensor, error) {
	if cutoffs == nil {
		return nil, nil
	}
	n := len(cutoffs)
	if h.cutoff == nil || h.cutoff.Numel() < n {
		if h.cutoff != nil {
			h.m.Backend.Free(h.cutoff.Storage)
		}
		t, err := tensor.New(h.m.Backend, tensor.Float32, h.cap)
		if err != nil {
			return nil, fmt.Errorf("llama: allocating %d cutoffs: %w", n, err)
		}
		h.cutoff = t
	}
	v := h.cutoff.View(0, n)
	return v, h.m.Backend.Upload(v, cutoffs)
}

// gather copies the selected rows of the final hidden states and records the scatter of their
// gradient back.
func (h *SelectedHead) gather(tp *autograd.Tape, positions []int) *autograd.Var {
	C := h.m.Config.Hidden
	hid := h.hidden.View(0, len(positions), C)
	autograd.GatherRows(tp, hid, h.m.acts.final, positions, C)
	return hid
}

// chunkLogits computes the logits of gathered rows r0..r0+R-1 into the chunk scratch.
func (h *SelectedHead) chunkLogits(hid *autograd.Var, r0, R int) *tensor.Tensor {
	m := h.m
	C, V := m.Config.Hidden, m.Config.Vocab
	logits := h.logits.View(0, R, V)
	m.Backend.MatMul(logits, hid.Value.View(r0*C, R, C), m.head.Value, nil, tensor.MatMulParams{M: R, N: V, K: C, TransB: true})
	return logits
}

// backward recomputes each chunk's logits and accumulates the gradients of the gathered hidden
// states and of the head's weight (when it trains).
func (h *SelectedHead) backward(hid, logp, entropy *autograd.Var, tgt, cut *tensor.Tensor, n int, temperature float32) {
	m := h.m
	be, C, V := m.Backend, m.Config.Hidden, m.Config.Vocab
	for r0 := 0; r0 < n; r0 += h.rows {
		R := min(h.rows, n-r0)
		logits := h.chunkLogits(hid, r0, R)
		dlogits := h.dlogits.View(0, R, V)
		be.Fill(dlogits, 0)
		be.LogSoftmaxGatherBackward(dlogits, logits, tgt.View(r0, R), viewOrNil(cut, r0, R), logp.Grad.View(r0, R), entropy.Grad.View(r0, R), R, m.TokenVocab(), V, temperature)
		be.MatMul(hid.Grad.View(r0*C, R, C), dlogits, m.head.Value, nil, tensor.MatMulParams{M: R, N: C, K: V, Accumulate: true})
		if m.head.Grad != nil { // nil when only adapters train
			be.MatMul(m.head.Grad, dlogits, hid.Value.View(r0*C, R, C), nil, tensor.MatMulParams{M: V, N: C, K: R, TransA: true, Accumulate: true})
		}
	}
}

// Hidden returns the gathered hidden states (len(positions), C) of the last Forward: the input
// of a value head at the same positions.
func (h *SelectedHead) Hidden(n int) *autograd.Var { return h.hidden.View(0, n, h.m.Config.Hidden) }

func viewOrNil(t *tensor.Tensor, off, n int) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return t.View(off, n)
}

// SelectedHeadBytes is what a SelectedHead holds for n positions (with gradients when
// withGrad): per position its hidden state, log-prob, entropy, target and cutoff, and one
// chunk of logits (and their gradient) however large n is.
func (m *Model) SelectedHeadBytes(n int, withGrad bool) int64 {
	g := int64(1)
	if withGrad {
		g = 2
	}
	perRow := g*int64(m.Config.Hidden+2) + 2
	return 4 * (int64(n)*perRow + g*int64(m.selectedChunkRows(n)*m.Config.Vocab))
}
