package gpt2

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// activations are the forward values (and their gradients) of one (B, T) batch, allocated once
// and reused every step, so training allocates nothing per step.
type activations struct {
	B, T     int
	withGrad bool
	// recompute lays out one ln1, one ln2 and one GELU output that every layer overwrites
	// (Model.Recompute); the backward recomputes each layer's into them (recomputeSteps).
	recompute bool

	values, grads *blocks // flat buffers behind the trunk's Vars
	// headValues and headGrads hold the full lm head's activations (logits, probs, losses,
	// logp, entropy), bound by the first Forward for this shape (headBound): a ForwardTrunk
	// with a SelectedHead never needs them, and at GPT-2's vocabulary they are most of the
	// activation memory.
	headValues, headGrads *blocks

	inputs, targets *tensor.Tensor // int32 (B*T)
	lpTargets       *tensor.Tensor // int32 (B*T), LogProbs' targets
	lpCutoff        *tensor.Tensor // float32, LogProbs' cutoffs (allocated on first use, may be longer)
	lossRecorded    bool           // a ForwardLoss is on the tape, ready for Backward
	encoded         *autograd.Var  // (B*T, C)
	layers          []layerActs
	lnf             *autograd.Var // (B*T, C), the final hidden states
	lnfMean         *tensor.Tensor
	lnfRstd         *tensor.Tensor
	logits          *autograd.Var // (B*T, Vp)
	probs           *tensor.Tensor
	losses          *autograd.Var  // (B*T)
	logp, entropy   *autograd.Var  // (B*T)
	lastLosses      *tensor.Tensor // the last ForwardCrossEntropy's per-token losses
	attScratch      *tensor.Tensor
	attSaved        [2]int // AttentionSaved's att and scratch sizes

	hostLosses []float32
	hostTokens []int32

	// clearInner clears each layer's share of the layer-shared gradients (clearInnerGrads),
	// made once per layout so that recording them every step allocates nothing.
	clearInner []func()
	// recomputes are each layer's recompute steps with recompute, made once per layout for
	// the same reason (recomputeSteps).
	recomputes   []layerRecompute
	recomputesOf *Model // the model whose weights recomputes read
}

type layerActs struct {
	ln1, qkv, atty, attproj, residual2, ln2, fch, fchGelu, fcproj, residual3 *autograd.Var
	ln1Mean, ln1Rstd, ln2Mean, ln2Rstd, att                                  *tensor.Tensor
}

// actLayout hands out consecutive regions of the value and gradient buffers, none crossing
// an allocation of cap floats (place).
type actLayout struct {
	values, grads *blocks
	offV, offG    int
	cap           int
	err           error
}

// bytes is what the regions handed out so far take, values and gradients.
func (a *actLayout) bytes() int64 { return 4 * int64(a.offV+a.offG) }

// tokenBytes are the int32 inputs, targets and log-prob targets of B×T tokens.
func tokenBytes(B, T int) int64 { return 3 * 4 * int64(B*T) }

// v hands out the region of the activation called name (named in errors), and one for its
// gradient when withGrad.
func (a *actLayout) v(name string, withGrad bool, shape ...int) *autograd.Var {
	out := &autograd.Var{Value: a.value(name, shape...)}
	if withGrad {
		out.Grad = a.gradView(a.grad(shape...), shape...)
	}
	return out
}

// value hands out the value region of the activation called name.
func (a *actLayout) value(name string, shape ...int) *tensor.Tensor {
	n := tensor.Shape(shape).Numel()
	if a.cap == 0 {
		a.cap = math.MaxInt
	}
	var err error
	if a.offV, err = place(a.offV, n, a.cap); err != nil && a.err == nil {
		a.err = fmt.Errorf("activation %s %v: %w", name, shape, err)
	}
	var t *tensor.Tensor
	if a.values != nil {
		t = a.values.view(a.offV, shape...)
	}
	a.offV += n
	return t
}

// grad hands out a gradient region and returns its offset.
func (a *actLayout) grad(shape ...int) int {
	n := tensor.Shape(shape).Numel()
	if a.cap == 0 {
		a.cap = math.MaxInt
	}
	a.offG, _ = place(a.offG, n, a.cap)
	off := a.offG
	a.offG += n
	return off
}

// gradView is the gradient region at off (nil while sizing).
func (a *actLayout) gradView(off int, shape ...int) *tensor.Tensor {
	if a.grads == nil {
		return nil
	}
	return a.grads.view(off, shape...)
}

// shared is a layer's view of value, a region every layer overwrites in turn (recompute), with
// the gradient at off when withGrad.
func (a *actLayout) shared(value *tensor.Tensor, withGrad bool, off int, shape ...int) *autograd.Var {
	out := &autograd.Var{Value: value}
	if withGrad {
		out.Grad = a.gradView(off, shape...)
	}
	return out
}

// inner hands out a value region of its own for a layer's activation whose gradient lives at
// off, a region every layer shares (see layerGradOffsets).
func (a *actLayout) inner(name string, withGrad bool, off int, shape ...int) *autograd.Var {
	out := &autograd.Var{Value: a.value(name, shape...)}
	if withGrad {
		out.Grad = a.gradView(off, shape...)
	}
	return out
}

func (a *actLayout) t(name string, shape ...int) *tensor.Tensor {
	return a.value(name, shape...)
}

// layerGradOffsets are the gradient regions of the activations that a layer's backward both
// writes and consumes (everything between its ln1 and its output residual). No other layer
// reads them, so every layer takes turns with one set: the trunk's activation gradients are
// two (B*T, C) per layer plus one layer's worth instead of eighteen per layer. The backward
// clears them before each layer (see Model.recordClearLayerGrads).
type layerGradOffsets struct {
	qkv, atty, attproj, residual2, ln2, fch, fchGelu, fcproj int
}

func (a *actLayout) layerGrads(BT, C int) layerGradOffsets {
	return layerGradOffsets{
		qkv: a.grad(BT, 3*C), atty: a.grad(BT, C), attproj: a.grad(BT, C), residual2: a.grad(BT, C),
		ln2: a.grad(BT, C), fch: a.grad(BT, 4*C), fchGelu: a.grad(BT, 4*C), fcproj: a.grad(BT, C),
	}
}

// layout assigns every trunk activation its region; called once with nil buffers to size them
// and once more to bind the views.
func (acts *activations) layout(cfg Config, l *actLayout) {
	acts.clearInner, acts.recomputes = nil, nil // they hold the previous layout's tensors
	acts.recomputesOf = nil
	B, T, C, L := acts.B, acts.T, cfg.Channels, cfg.NumLayers
	BT := B * T
	g := acts.withGrad
	acts.encoded = l.v("encoded", g, BT, C)
	var sg layerGradOffsets
	if g {
		sg = l.layerGrads(BT, C)
	}
	var shared recomputed
	if acts.recompute {
		shared = recomputed{ln1: l.t("ln1", BT, C), ln2: l.t("ln2", BT, C), fchGelu: l.t("fchGelu", BT, 4*C)}
	}
	acts.layers = make([]layerActs, L)
	for i := range acts.layers {
		la := &acts.layers[i]
		if acts.recompute {
			ln1Grad := 0
			if g {
				ln1Grad = l.grad(BT, C)
			}
			la.ln1 = l.shared(shared.ln1, g, ln1Grad, BT, C)
		} else {
			la.ln1 = l.v("ln1", g, BT, C)
		}
		la.ln1Mean, la.ln1Rstd = l.t("ln1Mean", BT), l.t("ln1Rstd", BT)
		la.qkv = l.inner("qkv", g, sg.qkv, BT, 3*C)
		la.att = l.t("att", acts.attSaved[0])
		la.atty = l.inner("atty", g, sg.atty, BT, C)
		la.attproj = l.inner("attproj", g, sg.attproj, BT, C)
		la.residual2 = l.inner("residual2", g, sg.residual2, BT, C)
		if acts.recompute {
			la.ln2 = l.shared(shared.ln2, g, sg.ln2, BT, C)
		} else {
			la.ln2 = l.inner("ln2", g, sg.ln2, BT, C)
		}
		la.ln2Mean, la.ln2Rstd = l.t("ln2Mean", BT), l.t("ln2Rstd", BT)
		la.fch = l.inner("fch", g, sg.fch, BT, 4*C)
		if acts.recompute {
			la.fchGelu = l.shared(shared.fchGelu, g, sg.fchGelu, BT, 4*C)
		} else {
			la.fchGelu = l.inner("fchGelu", g, sg.fchGelu, BT, 4*C)
		}
		la.fcproj = l.inner("fcproj", g, sg.fcproj, BT, C)
		la.residual3 = l.v("residual3", g, BT, C)
	}
	acts.lnf = l.v("lnf", g, BT, C)
	acts.lnfMean, acts.lnfRstd = l.t("lnfMean", BT), l.t("lnfRstd", BT)
	if g {
		acts.attScratch = l.t("attScratch", acts.attSaved[1])
	}
}

// innerGrads are layer l's Vars over the layer-shared gradients (layerGradOffsets).
func (acts *activations) innerGrads(l int) []*autograd.Var {
	la := &acts.layers[l]
	return []*autograd.Var{la.qkv, la.atty, la.attproj, la.residual2, la.ln2, la.fch, la.fchGelu, la.fcproj}
}

// clearInnerGrads is the backward step that zeroes the layer-shared gradients before layer l's
// backward. It marks layer l's Vars zero (autograd.Var.MarkGradZero) instead of filling them:
// no other layer's Var over the same memory is written after that point, and every op that
// writes them either overwrites or fills first.
func (acts *activations) clearInnerGrads(l int) func() {
	if acts.clearInner == nil {
		acts.clearInner = make([]func(), len(acts.layers))
	}
	if acts.clearInner[l] == nil {
		vars := acts.innerGrads(l)
		acts.clearInner[l] = func() {
			for _, v := range vars {
				v.MarkGradZero()
			}
		}
	}
	return acts.clearInner[l]
}

// layoutHead assigns the lm head's activations their regions, as layout does for the trunk.
func (acts *activations) layoutHead(cfg Config, l *actLayout) {
	BT, Vp, g := acts.B*acts.T, cfg.PaddedVocabSize, acts.withGrad
	acts.logits = l.v("logits", g, BT, Vp)
	if !g { // with gradients the loss is fused with its backward, which keeps no probabilities
		acts.probs = l.t("probs", BT, Vp)
	}
	acts.losses = l.v("losses", g, BT)
	acts.logp = l.v("logp", g, BT)
	acts.entropy = l.v("entropy", g, BT)
}

// bindHead lays out the head's activations for the current shape, growing its buffers when
// they are too small.
func (acts *activations) bindHead(b tensor.Backend, cfg Config) error {
	if acts.headBound() {
		return nil
	}
	cap := tensor.MaxAllocElems(b)
	sizing := &actLayout{cap: cap}
	acts.layoutHead(cfg, sizing)
	if sizing.err != nil {
		return fmt.Errorf("gpt2: the lm head's activations for B=%d T=%d: %w", acts.B, acts.T, sizing.err)
	}
	var need int64 // what is not already held
	if !acts.headValues.holds(sizing.offV) {
		need += 4 * int64(sizing.offV)
	}
	if acts.withGrad && !acts.headGrads.holds(sizing.offG) {
		need += 4 * int64(sizing.offG)
	}
	if err := tensor.CheckFits(b, need, fmt.Sprintf("gpt2: the lm head's activations for B=%d T=%d", acts.B, acts.T)); err != nil {
		return err
	}
	if !acts.headValues.holds(sizing.offV) {
		acts.headValues.free(b)
		bl, err := newBlocks(b, sizing.offV, cap)
		if err != nil {
			return fmt.Errorf("gpt2: allocating the lm head's activations for B=%d T=%d: %w", acts.B, acts.T, err)
		}
		acts.headValues = bl
	}
	if acts.withGrad && !acts.headGrads.holds(sizing.offG) {
		acts.headGrads.free(b)
		bl, err := newBlocks(b, sizing.offG, cap)
		if err != nil {
			return fmt.Errorf("gpt2: allocating the lm head's gradients for B=%d T=%d: %w", acts.B, acts.T, err)
		}
		acts.headGrads = bl
	}
	acts.layoutHead(cfg, &actLayout{values: acts.headValues, grads: acts.headGrads, cap: cap})
	return nil
}

// headBound reports whether the head's activations are laid out for the current shape.
func (acts *activations) headBound() bool { return acts.logits != nil }

func freeTensor(b tensor.Backend, t **tensor.Tensor) {
	if *t != nil {
		b.Free((*t).Storage)
		*t = nil
	}
}

func newActivations(b tensor.Backend, cfg Config, B, T int, withGrad, recompute bool) (*activations, error) {
	acts := &activations{B: B, T: T, withGrad: withGrad, recompute: recompute}
	acts.attSaved[0], acts.attSaved[1] = b.AttentionSaved(B, T, cfg.NumHeads)
	cap := tensor.MaxAllocElems(b)
	sizing := &actLayout{cap: cap}
	acts.layout(cfg, sizing)
	if sizing.err != nil {
		return nil, sizing.err
	}
	var err error
	bind := &actLayout{cap: cap}
	if bind.values, err = newBlocks(b, sizing.offV, cap); err != nil {
		return nil, err
	}
	if withGrad {
		if bind.grads, err = newBlocks(b, sizing.offG, cap); err != nil {
			bind.values.free(b)
			return nil, err
		}
	}
	acts.layout(cfg, bind)
	acts.values, acts.grads = bind.values, bind.grads
	if acts.inputs, err = tensor.New(b, tensor.Int32, B*T); err != nil {
		return nil, err
	}
	if acts.targets, err = tensor.New(b, tensor.Int32, B*T); err != nil {
		return nil, err
	}
	if acts.lpTargets, err = tensor.New(b, tensor.Int32, B*T); err != nil {
		return nil, err
	}
	acts.hostLosses = make([]float32, B*T)
	acts.hostTokens = make([]int32, B*T)
	return acts, nil
}

func (acts *activations) free(b tensor.Backend) {
	for _, bl := range []*blocks{acts.values, acts.grads, acts.headValues, acts.headGrads} {
		bl.free(b)
	}
	for _, t := range []*tensor.Tensor{acts.inputs, acts.targets, acts.lpTargets, acts.lpCutoff} {
		if t != nil {
			b.Free(t.Storage)
		}
	}
}
