package gpt2

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/internal/tokenids"
	"github.com/vkgrad/vkgrad/nn/internal/tokenloss"
	"github.com/vkgrad/vkgrad/tensor"
)

// checkTokens reports a batch ids that is not B*T long or that holds an id outside the
// vocabulary; what names the argument in the error.
func (m *Model) checkTokens(what string, ids []int32, B, T int) error {
	if err := tokenids.Check(what, ids, B, T, m.Config.VocabSize); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}

// ensureActs lays out activations for (B, T), reusing the buffers when they are large enough.
func (m *Model) ensureActs(B, T int, withGrad bool) error {
	if err := m.checkShape(B, T); err != nil {
		return err
	}
	m.takeActs()
	withGrad = withGrad || m.ActsWithGrads
	if a := m.acts; a != nil && a.B == B && a.T == T && (a.withGrad || !withGrad) && a.recompute == m.Recompute {
		return nil
	}
	withGrad = withGrad || (m.acts != nil && m.acts.withGrad)
	next := &activations{B: B, T: T, withGrad: withGrad, recompute: m.Recompute}
	next.attSaved[0], next.attSaved[1] = m.Backend.AttentionSaved(B, T, m.Config.NumHeads)
	sizing := &actLayout{cap: tensor.MaxAllocElems(m.Backend)}
	next.layout(m.Config, sizing)
	if sizing.err != nil {
		return fmt.Errorf("gpt2: B=%d T=%d: %w", B, T, sizing.err)
	}
	if m.reuseActs(next, sizing) {
		return nil
	}
	return m.allocateActs(B, T, withGrad, sizing)
}

// ShareActivations makes m and o use one set of activations: a forward of either takes them
// from the other, so a frozen reference model run between a policy's passes needs none of its
// own. A forward recorded on a tape must be back-propagated before the other model's forward.
func (m *Model) ShareActivations(o *Model) error {
	if m == o || m.Backend != o.Backend || m.Config != o.Config {
		return fmt.Errorf("gpt2: activations are shared only between two models of one shape on one backend")
	}
	m.peer, o.peer = o, m
	return nil
}

// takeActs moves the peer's activations to m when it holds them.
func (m *Model) takeActs() {
	p := m.peer
	if p == nil || p.acts == nil {
		return
	}
	if m.acts != nil {
		m.acts.free(m.Backend)
	}
	m.acts, p.acts = p.acts, nil
}

// checkShape refuses a batch shape the model cannot run.
func (m *Model) checkShape(B, T int) error {
	if B <= 0 || T <= 0 {
		return fmt.Errorf("gpt2: batch size %d and sequence length %d must be positive", B, T)
	}
	if T > m.Config.MaxSeqLen {
		return fmt.Errorf("gpt2: sequence length %d exceeds the model's max_seq_len %d", T, m.Config.MaxSeqLen)
	}
	return nil
}

// reuseActs lays next out in the current activations' buffers when they hold what sizing
// asks for, and makes it the model's activations.
func (m *Model) reuseActs(next *activations, sizing *actLayout) bool {
	old, n := m.acts, next.B*next.T
	if old == nil || !old.values.holds(sizing.offV) || (next.withGrad && !old.grads.holds(sizing.offG)) || !fits(old.inputs, n) {
		return false
	}
	bind := &actLayout{values: old.values, grads: old.grads, cap: sizing.cap}
	next.layout(m.Config, bind)
	next.values, next.grads = bind.values, bind.grads
	next.inputs, next.targets, next.lpTargets = whole(old.inputs).View(0, n), whole(old.targets).View(0, n), whole(old.lpTargets).View(0, n)
	next.lpCutoff = whole(old.lpCutoff)
	next.headValues, next.headGrads = old.headValues, old.headGrads
	next.hostLosses, next.hostTokens = make([]float32, n), make([]int32, n)
	if cap(old.hostLosses) >= n {
		next.hostLosses, next.hostTokens = old.hostLosses[:n], old.hostTokens[:n]
	}
	m.acts = next
	return true
}

// allocateActs frees the current activations and allocates new ones of sizing's footprint,
// after checking that they fit the device's memory.
func (m *Model) allocateActs(B, T int, withGrad bool, sizing *actLayout) error {
	if m.acts != nil {
		m.acts.free(m.Backend)
		m.acts = nil
	}
	if err := tensor.CheckFits(m.Backend, sizing.bytes()+tokenBytes(B, T), fmt.Sprintf("gpt2: the activations of B=%d T=%d", B, T)); err != nil {
		return err
	}
	a, err := newActivations(m.Backend, m.Config, B, T, withGrad, m.Recompute)
	if err != nil {
		return fmt.Errorf("gpt2: allocating activations for B=%d T=%d: %w", B, T, err)
	}
	m.acts = a
	return nil
}

// fits reports whether t's storage holds at least n elements.
func fits(t *tensor.Tensor, n int) bool { return t != nil && t.Storage.Len() >= n }

// whole is a flat view of all of t's storage (nil stays nil), so buffers shrunk for one batch
// shape can grow back for the next without reallocating.
func whole(t *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	return &tensor.Tensor{Storage: t.Storage, Shape: tensor.Shape{t.Storage.Len()}}
}

// Forward runs GPT-2 on inputs (B*T token ids, row-major) up to the logits (B*T, Vp). When tp
// records, gradients must be enabled and the backward of every op is recorded.
func (m *Model) Forward(tp *autograd.Tape, inputs []int32, B, T int) error {
	if err := m.ForwardTrunk(tp, inputs, B, T); err != nil {
		return err
	}
	a := m.acts
	if err := a.bindHead(m.Backend, m.Config); err != nil {
		return err
	}
	C, Vp := m.Config.Channels, m.Config.PaddedVocabSize
	autograd.MatMul(tp, a.logits, a.lnf, m.wte, nil, tensor.MatMulParams{M: B * T, N: Vp, K: C, TransB: true})
	return nil
}

// ForwardTrunk runs GPT-2 on inputs (B*T token ids) up to the final hidden states (Hidden),
// without the lm head. With SelectedHead the head then runs only where a loss is needed: an
// RL or answer-only loss uses a few positions per row, and the head (B*T x V logits) is most of
// a small model's cost.
func (m *Model) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	if tp.Recording() && m.Grads == nil {
		return fmt.Errorf("gpt2: recording a tape needs gradients; call EnableGrads first")
	}
	if err := m.checkTokens("inputs", inputs, B, T); err != nil {
		return err
	}
	if err := m.ensureActs(B, T, tp.Recording()); err != nil {
		return err
	}
	if err := m.Backend.UploadInt32(m.acts.inputs, inputs); err != nil {
		return err
	}
	m.acts.lossRecorded = false
	m.forwardTrunk(tp)
	return nil
}

func (m *Model) forwardTrunk(tp *autograd.Tape) {
	a := m.acts
	B, T, C, NH := a.B, a.T, m.Config.Channels, m.Config.NumHeads
	BT := B * T
	autograd.Encoder(tp, a.encoded, a.inputs, m.wte, m.wpe, B, T, C)
	first := m.normBefore(0)
	autograd.LayerNorm(tp, first.out, first.mean, first.rstd, a.encoded, first.w, first.b, BT, C)
	residual := a.encoded
	recompute := tp.Recording() && a.recompute
	var rc layerRecompute
	for l := range m.layers {
		lp, la := &m.layers[l], &a.layers[l]
		if recompute {
			rc = m.recomputeSteps(l)
		}
		m.recordGradsFinal(tp, l)
		autograd.MatMul(tp, la.qkv, la.ln1, lp.qkvw, lp.qkvb, tensor.MatMulParams{M: BT, N: 3 * C, K: C, TransB: true})
		recordRecompute(tp, recompute, rc.ln1)
		autograd.Attention(tp, la.atty, la.att, a.attScratch, la.qkv, B, T, C, NH)
		autograd.MatMul(tp, la.attproj, la.atty, lp.attprojw, lp.attprojb, tensor.MatMulParams{M: BT, N: C, K: C, TransB: true})
		autograd.ResidualLayerNorm(tp, la.residual2, residual, la.attproj, la.ln2, la.ln2Mean, la.ln2Rstd, lp.ln2w, lp.ln2b, BT, C)
		autograd.MatMulGelu(tp, la.fch, la.fchGelu, la.ln2, lp.fcw, lp.fcb, tensor.MatMulParams{M: BT, N: 4 * C, K: C, TransB: true})
		recordRecompute(tp, recompute, rc.ln2)
		autograd.MatMul(tp, la.fcproj, la.fchGelu, lp.fcprojw, lp.fcprojb, tensor.MatMulParams{M: BT, N: C, K: 4 * C, TransB: true})
		recordRecompute(tp, recompute, rc.gelu)
		next := m.normBefore(l + 1) // the next layer's ln1, or lnf after the last
		autograd.ResidualLayerNorm(tp, la.residual3, la.residual2, la.fcproj, next.out, next.mean, next.rstd, next.w, next.b, BT, C)
		m.recordClearLayerGrads(tp, l)
		residual = la.residual3
	}
}

// recordRecompute places step, which rewrites a shared value (Model.Recompute), right after the
// op that reads it: the tape runs it just before that op's backward, which reads it again.
func recordRecompute(tp *autograd.Tape, recompute bool, step func()) {
	if recompute {
		tp.Record(step)
	}
}

// recordClearLayerGrads places, after layer l's last op, the clearing of its share of the
// gradients every layer shares (layerGradOffsets): the tape runs it before that layer's
// backward, once the layer after it has consumed them.
func (m *Model) recordClearLayerGrads(tp *autograd.Tape, l int) {
	if !tp.Recording() {
		return
	}
	tp.Record(m.acts.clearInnerGrads(l))
}

// norm is one layernorm of the trunk: its output, saved statistics and parameters.
type norm struct {
	out        *autograd.Var
	mean, rstd *tensor.Tensor
	w, b       *autograd.Var
}

// normBefore is the layernorm that opens layer l (its ln1), or the final lnf for l = L: each is
// fused with the residual add before it.
func (m *Model) normBefore(l int) norm {
	a := m.acts
	if l == len(m.layers) {
		return norm{a.lnf, a.lnfMean, a.lnfRstd, m.lnfw, m.lnfb}
	}
	la, lp := &a.layers[l], &m.layers[l]
	return norm{la.ln1, la.ln1Mean, la.ln1Rstd, lp.ln1w, lp.ln1b}
}

// ForwardLoss runs Forward and the cross-entropy against targets, returning the mean loss
// (summed in float32 in row order, as llm.c does).
func (m *Model) ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error) {
	if err := m.ForwardCrossEntropy(tp, inputs, targets, B, T); err != nil {
		return 0, err
	}
	return m.MeanLoss()
}

// ForwardCrossEntropy is ForwardLoss without reading the loss back: the per-token losses stay
// on the device (Losses), so a training step can read everything it reports in one transfer.
func (m *Model) ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error {
	if err := m.checkTargets(targets, B, T); err != nil {
		return err
	}
	if m.chunkedLoss(B * T) {
		if err := m.ForwardTrunk(tp, inputs, B, T); err != nil {
			return err
		}
		if err := m.Backend.UploadInt32(m.acts.targets, targets); err != nil {
			return err
		}
		if err := m.forwardChunkedLoss(tp); err != nil {
			return err
		}
		m.acts.lossRecorded = tp.Recording()
		return nil
	}
	if err := m.Forward(tp, inputs, B, T); err != nil {
		return err
	}
	a := m.acts
	if err := m.Backend.UploadInt32(a.targets, targets); err != nil {
		return err
	}
	a.lastLosses = a.losses.Value
	V, Vp := m.TokenVocab(), m.Config.PaddedVocabSize
	if a.withGrad {
		// The gradient of the mean loss, which Backward propagates, is 1/(B·T) on every row:
		// known now, so the loss and its gradient take one pass and no probabilities.
		autograd.CrossEntropyFused(a.losses, a.logits, a.targets, B*T, V, Vp, m.lossGrad(B, T))
	} else {
		autograd.CrossEntropy(tp, a.losses, a.probs, a.logits, a.targets, B*T, V, Vp)
	}
	a.lossRecorded = tp.Recording()
	return nil
}

// meanGrad is the gradient of the mean of B·T per-token losses with respect to each.
func meanGrad(B, T int) float32 { return 1 / float32(B*T) }

// lossGrad is the gradient Backward seeds on each per-token loss: meanGrad times LossScale.
func (m *Model) lossGrad(B, T int) float32 {
	if m.LossScale == 0 {
		return meanGrad(B, T)
	}
	return meanGrad(B, T) * m.LossScale
}

// Losses returns the per-token losses (B*T) of the last ForwardCrossEntropy, on the device.
func (m *Model) Losses() *tensor.Tensor { return m.acts.lastLosses }

// MeanLoss downloads the per-token losses of the last ForwardLoss and averages them.
func (m *Model) MeanLoss() (float32, error) {
	a := m.acts
	if a == nil || a.lastLosses == nil {
		return 0, fmt.Errorf("gpt2: MeanLoss needs a ForwardLoss first")
	}
	if err := m.Backend.Download(a.hostLosses, a.lastLosses); err != nil {
		return 0, err
	}
	return tokenloss.Mean(a.hostLosses), nil
}

// TokenLosses returns the per-token losses of the last ForwardLoss (host copy, reused).
func (m *Model) TokenLosses() []float32 { return m.acts.hostLosses }

// ZeroActGrads clears the activation gradients; call it before seeding output gradients. The
// logits' gradient is left alone: the fused loss has already written it.
func (m *Model) ZeroActGrads() {
	a := m.acts
	if a != nil && a.grads != nil {
		a.grads.fill(m.Backend, 0)
		if a.headBound() && a.headGrads != nil {
			for _, v := range []*autograd.Var{a.losses, a.logp, a.entropy} {
				m.Backend.Fill(v.Grad, 0)
			}
		}
	}
}

// ZeroGrad clears the parameter gradients.
func (m *Model) ZeroGrad() {
	if m.Grads != nil {
		m.Grads.Fill(0)
	}
}

// BackwardFromZero is ZeroGrad followed by Backward without the clearing pass: each parameter's
// gradient is marked zero (autograd.Var.MarkGradZero), so its first writer overwrites it, and
// one nobody wrote is filled with zeros when the pass ends. The gradients hold the same bits,
// except that an element the pass sets to -0 stays -0 (0 + (-0) is +0).
func (m *Model) BackwardFromZero(tp *autograd.Tape) error {
	for _, v := range m.params {
		v.MarkGradZero()
	}
	err := m.Backward(tp)
	for _, v := range m.params {
		v.SettleGrad()
	}
	return err
}

// Backward back-propagates the mean loss of the last recorded ForwardLoss, accumulating into the
// parameter gradients.
func (m *Model) Backward(tp *autograd.Tape) error {
	if m.acts == nil || m.acts.grads == nil || tp.Len() == 0 || !m.acts.lossRecorded {
		return fmt.Errorf("gpt2: Backward needs a ForwardLoss recorded on the tape")
	}
	m.acts.lossRecorded = false
	m.ZeroActGrads()
	a := m.acts
	if a.headBound() { // the chunked loss's gradient is the mean's already
		m.Backend.Fill(a.losses.Grad, m.lossGrad(a.B, a.T))
	}
	tp.Backward()
	return nil
}

// LogProbs computes, after Forward, the log-probability of each target token under the softmax
// of logits/temperature (and the entropy of that distribution). The returned Vars (B*T) are the
// model's own buffers: seed their Grad after ZeroActGrads and run the tape to back-propagate.
//
// cutoffs, when not nil (B*T values), replays a top-k/top-p sampler's truncation: position i's
// distribution keeps only the tokens whose logit (before the temperature) is at least
// cutoffs[i], and its target, renormalised; -Inf keeps every token (see
// tensor.Backend.LogSoftmaxGather). The entropy is then that of the truncated distribution.
func (m *Model) LogProbs(tp *autograd.Tape, targets []int32, cutoffs []float32, temperature float32) (logp, entropy *autograd.Var, err error) {
	a := m.acts
	if a == nil || !a.headBound() {
		return nil, nil, fmt.Errorf("gpt2: LogProbs needs a Forward first (ForwardTrunk computes no logits)")
	}
	if !(temperature > 0) || math.IsInf(float64(temperature), 1) {
		return nil, nil, fmt.Errorf("gpt2: temperature %v must be positive and finite", temperature)
	}
	if err := m.checkTargets(targets, a.B, a.T); err != nil {
		return nil, nil, err
	}
	n := a.B * a.T
	cut, err := m.uploadCutoffs(&a.lpCutoff, cutoffs, n)
	if err != nil {
		return nil, nil, err
	}
	// Its own targets buffer: a recorded CrossEntropy still reads a.targets in its backward.
	if err := m.Backend.UploadInt32(a.lpTargets, targets); err != nil {
		return nil, nil, err
	}
	V, Vp := m.TokenVocab(), m.Config.PaddedVocabSize
	autograd.LogSoftmaxGather(tp, a.logp, a.entropy, a.logits, a.lpTargets, cut, n, V, Vp, temperature)
	return a.logp, a.entropy, nil
}

// uploadCutoffs checks cutoffs (nil, or n values none of which is NaN), grows *buf to hold n
// floats when needed and uploads them; it returns the view to pass to LogSoftmaxGather (nil
// for nil cutoffs).
func (m *Model) uploadCutoffs(buf **tensor.Tensor, cutoffs []float32, n int) (*tensor.Tensor, error) {
	if cutoffs == nil {
		return nil, nil
	}
	if len(cutoffs) != n {
		return nil, fmt.Errorf("gpt2: %d cutoffs for %d positions", len(cutoffs), n)
	}
	for i, c := range cutoffs {
		if c != c {
			return nil, fmt.Errorf("gpt2: cutoffs[%d] is NaN (-Inf keeps every token)", i)
		}
	}
	if !fits(*buf, n) {
		freeTensor(m.Backend, buf)
		t, err := tensor.New(m.Backend, tensor.Float32, n)
		if err != nil {
			return nil, fmt.Errorf("gpt2: allocating %d cutoffs: %w", n, err)
		}
		*buf = t
	}
	v := whole(*buf).View(0, n)
	if err := m.Backend.Upload(v, cutoffs); err != nil {
		return nil, err
	}
	return v, nil
}

// Hidden returns the final hidden states (B*T, C) of the last Forward: the input of the lm head
// and of value heads.
func (m *Model) Hidden() *autograd.Var { return m.acts.lnf }

// Logits returns the logits (B*T, Vp) of the last Forward.
func (m *Model) Logits() *autograd.Var { return m.acts.logits }

// ReleaseActivations frees the activations (its peer's too, when shared); the next forward
// pass lays them out again. Between phases that need them (an RL step's rollout) this hands
// their memory to the phase that runs.
func (m *Model) ReleaseActivations() {
	for _, o := range []*Model{m, m.peer} {
		if o == nil {
			continue
		}
		if o.acts != nil {
			o.acts.free(o.Backend)
			o.acts = nil
		}
		o.freeLossHead()
	}
}

// ReserveActivations lays out activations for B sequences of T tokens (with room for the
// gradients when withGrad) now, so that the forward passes of up to that shape that follow
// reuse them rather than growing them pass by pass.
func (m *Model) ReserveActivations(B, T int, withGrad bool) error {
	if withGrad && m.Grads == nil {
		return fmt.Errorf("gpt2: activations with gradients need EnableGrads first")
	}
	return m.ensureActs(B, T, withGrad)
}
