package llama

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/internal/tokenloss"
	"github.com/vkgrad/vkgrad/tensor"
)

// ensureActs lays out activations for (B, T), reusing the current ones' storages when each is
// large enough.
func (m *Model) ensureActs(B, T int, withGrad bool) error {
	if B <= 0 || T <= 0 {
		return fmt.Errorf("llama: batch size %d and sequence length %d must be positive", B, T)
	}
	if m.Config.MaxPositions > 0 && T > m.Config.MaxPositions {
		return fmt.Errorf("llama: sequence length %d exceeds max_position_embeddings %d", T, m.Config.MaxPositions)
	}
	m.takeActs()
	if err := m.layOut(B, T, withGrad); err != nil {
		return err
	}
	return m.ensureRope(T) // a peer's activations come without it
}

// layOut makes m.acts a (B, T) layout: the current one when it is of that shape, else in its
// storages when they are large enough, else a new one.
func (m *Model) layOut(B, T int, withGrad bool) error {
	if a := m.acts; a != nil && a.B == B && a.T == T && (a.withGrad || !withGrad) && a.recompute == m.Recompute {
		return nil
	}
	if m.acts != nil {
		if a := reuseActivations(m.Backend, m.Config, B, T, withGrad, m.Recompute, m.lora, m.acts); a != nil {
			m.acts = a
			return nil
		}
		m.acts.free(m.Backend)
		m.acts = nil
	}
	a, err := newActivations(m.Backend, m.Config, B, T, withGrad, m.Recompute, m.lora)
	if err != nil {
		return fmt.Errorf("llama: allocating activations for B=%d T=%d: %w", B, T, err)
	}
	m.acts = a
	return nil
}

// ShareActivations makes m and o use one set of activations: a forward of either takes them
// from the other, so a frozen reference model run between a policy's passes needs none of its
// own. A forward recorded on a tape must be back-propagated before the other model's forward.
// Models with LoRA adapters share none (their reference is the same model).
func (m *Model) ShareActivations(o *Model) error {
	if m == o || m.Backend != o.Backend || !reflect.DeepEqual(m.Config, o.Config) {
		return fmt.Errorf("llama: activations are shared only between two models of one shape on one backend")
	}
	if m.lora != nil || o.lora != nil {
		return fmt.Errorf("llama: a model with LoRA adapters shares no activations")
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

// Forward runs the model on inputs (B*T token ids, row-major) up to the logits (B*T, V).
// When tp records, gradients must be enabled.
func (m *Model) Forward(tp *autograd.Tape, inputs []int32, B, T int) error {
	if err := m.ForwardTrunk(tp, inputs, B, T); err != nil {
		return err
	}
	a, c := m.acts, m.Config
	if err := a.bindLogits(m.Backend, c); err != nil {
		return err
	}
	autograd.MatMul(tp, a.logits, a.final, m.head, nil, tensor.MatMulParams{M: B * T, N: c.Vocab, K: c.Hidden, TransB: true})
	return nil
}

// ForwardTrunk runs the model up to the final hidden states (Hidden), without the lm head.
func (m *Model) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	if _, g := m.Trainable(); tp.Recording() && g == nil {
		return fmt.Errorf("llama: recording a tape needs gradients; call EnableGrads (or EnableLoRA) first")
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
	m.forward(tp)
	return nil
}

// forward is the computation up to the final hidden states, a flat list of named steps.
func (m *Model) forward(tp *autograd.Tape) {
	a, c := m.acts, m.Config
	B, T := a.B, a.T
	N, C, H, KV, D, I := B*T, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate
	eps := float32(c.RMSNormEps)
	var layer int
	linear := func(module string, out, in, w, b *autograd.Var, n, k int) {
		autograd.MatMul(tp, out, in, w, b, tensor.MatMulParams{M: N, N: n, K: k, TransB: true})
		m.addAdapter(tp, layer, module, out, in)
	}
	if m.lora != nil && tp.Recording() {
		m.lora.dropSeed++
	}
	autograd.Embedding(tp, a.embedded, a.inputs, m.embed, N, C)
	first := m.normBefore(0)
	autograd.RMSNorm(tp, first.out, first.rstd, a.embedded, first.w, N, C, eps)
	x := a.embedded
	recompute := tp.Recording() && a.recompute
	var rc layerRecompute
	for l := range m.layers {
		lp, la := &m.layers[l], &a.layers[l]
		layer = l
		if recompute {
			rc = m.recomputeSteps(l)
		}
		linear("q_proj", la.q, la.h1, lp.wq, lp.bq, H*D, C)
		linear("k_proj", la.k, la.h1, lp.wk, lp.bk, KV*D, C)
		linear("v_proj", la.v, la.h1, lp.wv, lp.bv, KV*D, C)
		recordRecompute(tp, recompute, rc.h1)
		q, k := la.q, la.k
		if c.QKNorm {
			autograd.RMSNorm(tp, la.qn, la.rstdQ, q, lp.qNorm, N*H, D, eps)
			autograd.RMSNorm(tp, la.kn, la.rstdK, k, lp.kNorm, N*KV, D, eps)
			q, k = la.qn, la.kn
		}
		autograd.RoPE(tp, la.qr, q, m.rope, N, T, 0, H, H, H*D)
		autograd.RoPE(tp, la.kr, k, m.rope, N, T, 0, KV, KV, KV*D)
		autograd.PackQKV(tp, la.qkv, la.qr, la.kr, la.v, N, H, KV, D)
		autograd.Attention(tp, la.atty, la.att, a.attScratch, la.qkv, B, T, H*D, H)
		linear("o_proj", la.o, la.atty, lp.wo, nil, C, H*D)
		autograd.ResidualRMSNorm(tp, la.x2, x, la.o, la.h2, la.rstd2, lp.mlpNorm, N, C, eps)
		linear("gate_proj", la.gate, la.h2, lp.wgate, nil, I, C)
		linear("up_proj", la.up, la.h2, lp.wup, nil, I, C)
		recordRecompute(tp, recompute, rc.h2)
		autograd.SwiGLU(tp, la.act, la.gate, la.up)
		linear("down_proj", la.down, la.act, lp.wdown, nil, C, I)
		recordRecompute(tp, recompute, rc.act)
		next := m.normBefore(l + 1) // the next layer's input norm, or the final norm after the last
		autograd.ResidualRMSNorm(tp, la.x3, la.x2, la.down, next.out, next.rstd, next.w, N, C, eps)
		m.recordClearSharedGrads(tp)
		x = la.x3
	}
}

// recordClearSharedGrads places, after a layer's last op, the clearing of the gradients every
// layer shares (alloc.inner): the tape runs it before that layer's backward, once the layer
// after it has consumed them.
func (m *Model) recordClearSharedGrads(tp *autograd.Tape) {
	if tp.Recording() && len(m.acts.sharedOrder) > 0 {
		tp.Record(m.acts.clearSharedGrads(m.Backend))
	}
}

// norm is one RMSNorm of the trunk: its output, saved rstd and weight.
type norm struct {
	out  *autograd.Var
	rstd *tensor.Tensor
	w    *autograd.Var
}

// normBefore is the RMSNorm that opens layer l (input_layernorm), or the final norm for l = L:
// each is fused with the residual add before it.
func (m *Model) normBefore(l int) norm {
	a := m.acts
	if l == len(m.layers) {
		return norm{a.final, a.finalRstd, m.norm}
	}
	return norm{a.layers[l].h1, a.layers[l].rstd1, m.layers[l].attnNorm}
}

// ForwardLoss runs the model and returns the mean cross-entropy of its predictions against
// targets. The lm head runs in chunks of rows (headChunkRows), so the (B*T, V) logits are never
// held at once: with a 152k vocabulary they would be most of the memory. When tp records, the
// backward recomputes each chunk's logits.
func (m *Model) ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error) {
	if err := m.ForwardCrossEntropy(tp, inputs, targets, B, T); err != nil {
		return 0, err
	}
	a := m.acts
	if err := m.Backend.Download(a.hostLosses, a.losses.Value); err != nil {
		return 0, err
	}
	return tokenloss.Mean(a.hostLosses), nil
}

// ForwardCrossEntropy is ForwardLoss leaving the per-token losses on the device (Losses),
// without reading them back.
func (m *Model) ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error {
	if err := m.checkTargets(targets, B, T); err != nil {
		return err
	}
	if err := m.ForwardTrunk(tp, inputs, B, T); err != nil {
		return err
	}
	a := m.acts
	if err := m.Backend.UploadInt32(a.targets, targets); err != nil {
		return err
	}
	h, err := m.newHeadChunks(B * T)
	if err != nil {
		return err
	}
	h.forward()
	if tp.Recording() {
		tp.Record(h.backward)
	}
	return nil
}

// Losses returns the per-token cross-entropies (B*T) of the last ForwardLoss or
// ForwardCrossEntropy.
func (m *Model) Losses() *tensor.Tensor { return m.acts.losses.Value }

// Backward back-propagates the mean loss of the last recorded ForwardLoss into the parameter
// gradients (which accumulate; see ZeroGrad).
func (m *Model) Backward(tp *autograd.Tape) error {
	a := m.acts
	if a == nil || !a.withGrad || tp.Len() == 0 {
		return fmt.Errorf("llama: Backward needs a ForwardLoss recorded on the tape")
	}
	a.zeroGrads(m.Backend)
	m.Backend.Fill(a.losses.Grad, m.lossGrad(a.B, a.T))
	tp.Backward()
	return nil
}

// meanGrad is the gradient of the mean of B·T per-token losses with respect to each: what
// Backward seeds, and what the lm head's fused backward assumes.
func meanGrad(B, T int) float32 { return 1 / float32(B*T) }

// lossGrad is the gradient Backward seeds on each per-token loss: meanGrad times LossScale.
func (m *Model) lossGrad(B, T int) float32 {
	if m.LossScale == 0 {
		return meanGrad(B, T)
	}
	return meanGrad(B, T) * m.LossScale
}

// Logits returns the logits (B*T, V) of the last Forward.
func (m *Model) Logits() *autograd.Var { return m.acts.logits }

// Hidden returns the final hidden states (B*T, C) of the last Forward.
func (m *Model) Hidden() *autograd.Var { return m.acts.final }

// addAdapter adds a layer's LoRA term to a linear layer's output: out += s·(drop(in)·Aᵀ)·Bᵀ.
func (m *Model) addAdapter(tp *autograd.Tape, layer int, module string, out, in *autograd.Var) {
	lo := m.lora
	if lo == nil || lo.off {
		return
	}
	ad := lo.layers[layer][module]
	if ad == nil {
		return
	}
	la := &m.acts.layers[layer]
	acts := la.lora[module]
	N := m.acts.B * m.acts.T
	x := in
	if drop := la.loraIn[loraInputOf(module)]; drop != nil && tp.Recording() {
		if drop.drawn != lo.dropSeed { // the input's first adapter this forward draws the mask
			drop.drawn = lo.dropSeed
			seed := (lo.dropSeed*uint64(m.Config.Layers)+uint64(layer))*4 + uint64(slices.Index(loraInputs, loraInputOf(module)))
			autograd.Dropout(tp, drop.dropped, drop.mask, in, float32(lo.cfg.Dropout), seed)
		}
		x = drop.dropped
	}
	r := lo.cfg.Rank
	autograd.MatMul(tp, acts.xa, x, ad.A, nil, tensor.MatMulParams{M: N, N: r, K: ad.in, TransB: true})
	autograd.Scale(tp, acts.xas, acts.xa, lo.scale)
	autograd.MatMulAdd(tp, out, acts.xas, ad.B, tensor.MatMulParams{M: N, N: ad.out, K: r, TransB: true})
}

// ReleaseActivations frees the activations (its peer's too, when shared) and the lm head's
// chunk buffers; the next forward pass lays them out again. Between phases that need them (an
// RL step's rollout) this hands their memory to the phase that runs. The rotary table, which
// decoders read, stays.
func (m *Model) ReleaseActivations() {
	for _, o := range []*Model{m, m.peer} {
		if o == nil {
			continue
		}
		if o.acts != nil {
			o.acts.free(o.Backend)
			o.acts = nil
		}
		if o.head1 != nil {
			o.head1.free()
			o.head1 = nil
		}
	}
}

// ReserveActivations lays out activations for B sequences of T tokens (with room for the
// gradients when withGrad) now, so that the forward passes of up to that shape that follow
// reuse them rather than each laying out its own.
func (m *Model) ReserveActivations(B, T int, withGrad bool) error {
	if _, g := m.Trainable(); withGrad && g == nil {
		return fmt.Errorf("llama: activations with gradients need EnableGrads (or EnableLoRA) first")
	}
	return m.ensureActs(B, T, withGrad)
}
