package llama

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
)

// activations are the forward values (and, for training, gradients) of one (B, T) batch, kept
// across steps of the same shape. Each is its own allocation, so none is larger than the
// largest single activation.
type activations struct {
	B, T     int
	withGrad bool
	// recompute lays out one input-norm output, one MLP-norm output and one SwiGLU product
	// that every layer overwrites (Model.Recompute); the backward recomputes each layer's into
	// them (recomputeSteps).
	recompute bool
	all       []*autograd.Var // every Var, for zeroing gradients and freeing
	owned     []*tensor.Tensor

	inputs, targets *tensor.Tensor // int32 (B*T)
	embedded        *autograd.Var
	layers          []layerActs
	final           *autograd.Var
	finalRstd       *tensor.Tensor
	logits          *autograd.Var // (B*T, V), allocated by the first Forward (ForwardLoss never needs it)
	losses          *autograd.Var
	attScratch      *tensor.Tensor

	hostLosses []float32

	// shared are the gradients of a layer's inner activations by name, one set every layer
	// takes turns with (see alloc.inner); sharedOrder lists them in layout order.
	shared      map[string]*tensor.Tensor
	sharedOrder []*tensor.Tensor
	// clearShared clears them (clearSharedGrads), made once per layout so that recording it
	// for every layer of every step allocates nothing.
	clearShared func()
	// ownGrads are the gradients of Vars whose value is shared (recompute) and whose gradient
	// is their own: not in all, so zeroGrads clears them from here.
	ownGrads []*tensor.Tensor
	// recomputes are each layer's recompute steps, made once per layout and model for the same
	// reason as clearShared (recomputeSteps).
	recomputes   []layerRecompute
	recomputesOf *Model
}

type layerActs struct {
	h1, q, k, v, qn, kn, qr, kr, qkv, atty, o, x2, h2, gate, up, act, down, x3 *autograd.Var
	rstd1, rstdQ, rstdK, rstd2, att                                            *tensor.Tensor
	lora                                                                       map[string]*loraActs  // by module
	loraIn                                                                     map[string]*loraInput // by input, with dropout
}

// alloc hands out activation tensors, remembering them for Free; counting, it only adds up the
// bytes they would take (EstimateFootprint); reusing, it hands out views of an earlier layout's
// storages instead of allocating.
type alloc struct {
	a        *activations
	be       tensor.Backend
	err      error
	counting bool
	bytes    int64
	reuse    *reuse
}

// reuse are the storages of an earlier layout, which a layout of the same model takes in the
// order they were allocated: the same sequence of tensors, each as large or larger when the
// earlier batch was.
type reuse struct {
	vars  []*autograd.Var
	owned []*tensor.Tensor
}

// errTooSmall is a reused storage shorter than the tensor asked of it.
var errTooSmall = errors.New("llama: a reserved activation is too small")

func (al *alloc) v(shape ...int) *autograd.Var {
	if al.counting {
		n := 4 * int64(tensor.Shape(shape).Numel())
		if al.a.withGrad {
			n *= 2
		}
		al.bytes += n
		return nil
	}
	if al.err != nil {
		return nil
	}
	if al.reuse != nil {
		return al.reuseVar(shape)
	}
	v, err := autograd.NewVar(al.be, al.a.withGrad, shape...)
	if err != nil {
		al.err = err
		return nil
	}
	al.a.all = append(al.a.all, v)
	return v
}

func (al *alloc) t(dtype tensor.DType, shape ...int) *tensor.Tensor {
	if al.counting {
		al.bytes += 4 * int64(tensor.Shape(shape).Numel()) // float32 and int32 alike
		return nil
	}
	if al.err != nil {
		return nil
	}
	if al.reuse != nil {
		return al.reuseTensor(dtype, shape)
	}
	t, err := tensor.New(al.be, dtype, shape...)
	if err != nil {
		al.err = err
		return nil
	}
	al.a.owned = append(al.a.owned, t)
	return t
}

// shareLayerGrads has the layers take turns with one set of inner gradients (alloc.inner); off,
// each has its own, the layout whose bits the shared one keeps.
var shareLayerGrads = true

// inner hands out a layer's activation whose gradient the layer's backward both writes and
// consumes, everything between its input norm and its output residual: no other layer reads
// it, so every layer takes turns with the one gradient of that name. Its value is its own.
// The trunk's activation gradients are then two (N, C) per layer and one layer's worth.
func (al *alloc) inner(name string, shape ...int) *autograd.Var {
	if !al.a.withGrad || !shareLayerGrads {
		return al.v(shape...)
	}
	value := al.t(tensor.Float32, shape...)
	grad := al.sharedGrad(name, shape)
	if al.counting || al.err != nil {
		return nil
	}
	return &autograd.Var{Value: value, Grad: grad}
}

// sharedGrad is the layer-shared gradient called name (see inner), laid out on first use.
func (al *alloc) sharedGrad(name string, shape []int) *tensor.Tensor {
	grad, ok := al.a.shared[name]
	if !ok {
		grad = al.t(tensor.Float32, shape...)
		if al.a.shared == nil {
			al.a.shared = map[string]*tensor.Tensor{}
		}
		al.a.shared[name] = grad // nil when counting: counted once all the same
		al.a.sharedOrder = append(al.a.sharedOrder, grad)
	}
	return grad
}

// sharedValue hands out a layer's view of value, a region every layer overwrites in turn
// (recompute), with a gradient when training: the layer-shared one called name as inner's, or
// with name "" one of its own.
func (al *alloc) sharedValue(value *tensor.Tensor, name string, shape ...int) *autograd.Var {
	var grad *tensor.Tensor
	if al.a.withGrad {
		if name != "" && shareLayerGrads {
			grad = al.sharedGrad(name, shape)
		} else if grad = al.t(tensor.Float32, shape...); grad != nil {
			al.a.ownGrads = append(al.a.ownGrads, grad)
		}
	}
	if al.counting || al.err != nil {
		return nil
	}
	return &autograd.Var{Value: value, Grad: grad}
}

// clearSharedGrads is the backward step that zeroes the layer-shared gradients on be.
func (a *activations) clearSharedGrads(be tensor.Backend) func() {
	if a.clearShared == nil {
		grads := a.sharedOrder
		a.clearShared = func() {
			for _, g := range grads {
				be.Fill(g, 0)
			}
		}
	}
	return a.clearShared
}

// reuseVar is the next earlier Var's storages viewed as shape.
func (al *alloc) reuseVar(shape []int) *autograd.Var {
	r := al.reuse
	if len(r.vars) == 0 {
		al.err = errTooSmall
		return nil
	}
	old := r.vars[0]
	r.vars = r.vars[1:]
	v := &autograd.Var{Value: viewOf(old.Value, tensor.Float32, shape)}
	if al.a.withGrad && old.Grad != nil {
		v.Grad = viewOf(old.Grad, tensor.Float32, shape)
	}
	if v.Value == nil || al.a.withGrad && v.Grad == nil {
		al.err = errTooSmall
		return nil
	}
	al.a.all = append(al.a.all, v)
	return v
}

// reuseTensor is the next earlier tensor's storage viewed as shape.
func (al *alloc) reuseTensor(dtype tensor.DType, shape []int) *tensor.Tensor {
	r := al.reuse
	if len(r.owned) == 0 {
		al.err = errTooSmall
		return nil
	}
	t := viewOf(r.owned[0], dtype, shape)
	r.owned = r.owned[1:]
	if t == nil {
		al.err = errTooSmall
		return nil
	}
	al.a.owned = append(al.a.owned, t)
	return t
}

// viewOf views the start of t's storage as shape, or is nil when the storage is of another
// type or too short.
func viewOf(t *tensor.Tensor, dtype tensor.DType, shape []int) *tensor.Tensor {
	s := tensor.Shape(slices.Clone(shape))
	if t.Storage.DType() != dtype || t.Storage.Len() < s.Numel() {
		return nil
	}
	return &tensor.Tensor{Storage: t.Storage, Shape: s}
}

// loraInputOf names the layer input a module reads, so adapters of one input share its dropout.
func loraInputOf(module string) string {
	switch module {
	case "q_proj", "k_proj", "v_proj":
		return "attn_in"
	case "o_proj":
		return "attn_out"
	case "gate_proj", "up_proj":
		return "mlp_in"
	}
	return "mlp_act"
}

func newActivations(be tensor.Backend, c Config, B, T int, withGrad, recompute bool, lo *lora) (*activations, error) {
	count := &alloc{a: &activations{B: B, T: T, withGrad: withGrad, recompute: recompute}, be: be, counting: true}
	count.a.layout(count, c, lo)
	if err := tensor.CheckFits(be, count.bytes, fmt.Sprintf("llama: the activations of B=%d T=%d", B, T)); err != nil {
		return nil, err
	}
	a := &activations{B: B, T: T, withGrad: withGrad, recompute: recompute, hostLosses: make([]float32, B*T)}
	al := &alloc{a: a, be: be}
	a.layout(al, c, lo)
	if al.err != nil {
		a.free(be)
		return nil, al.err
	}
	return a, nil
}

// reuseActivations lays out a (B, T) batch in old's storages, which it then owns, when each is
// large enough, and frees what it leaves unused (the full logits); it is nil, old untouched,
// when one is too small. Once old holds gradients so does the new layout, whose storages are
// the same.
func reuseActivations(be tensor.Backend, c Config, B, T int, withGrad, recompute bool, lo *lora, old *activations) *activations {
	a := &activations{B: B, T: T, withGrad: withGrad || old.withGrad, recompute: recompute}
	r := &reuse{vars: old.all, owned: old.owned}
	al := &alloc{a: a, be: be, reuse: r}
	a.layout(al, c, lo)
	if al.err != nil {
		return nil
	}
	(&activations{all: r.vars, owned: r.owned}).free(be)
	a.hostLosses = old.hostLosses[:0]
	if n := B * T; cap(a.hostLosses) >= n {
		a.hostLosses = a.hostLosses[:n]
	} else {
		a.hostLosses = make([]float32, n)
	}
	return a
}

// layout hands out every activation of a (B, T) batch from al.
func (a *activations) layout(al *alloc, c Config, lo *lora) {
	B, T, be, withGrad := a.B, a.T, al.be, a.withGrad
	N, C, H, KV, D, I := B*T, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate
	attSaved, attScratch := be.AttentionSaved(B, T, H)
	a.inputs, a.targets = al.t(tensor.Int32, N), al.t(tensor.Int32, N)
	a.embedded = al.v(N, C)
	var shared recomputed
	if a.recompute {
		shared = recomputed{h1: al.t(tensor.Float32, N, C), h2: al.t(tensor.Float32, N, C), act: al.t(tensor.Float32, N, I)}
	}
	a.layers = make([]layerActs, c.Layers)
	for l := range a.layers {
		la := &a.layers[l]
		if a.recompute {
			la.h1 = al.sharedValue(shared.h1, "", N, C)
		} else {
			la.h1 = al.v(N, C)
		}
		la.rstd1 = al.t(tensor.Float32, N)
		la.q, la.k, la.v = al.inner("q", N, H*D), al.inner("k", N, KV*D), al.inner("v", N, KV*D)
		if c.QKNorm {
			la.qn, la.kn = al.inner("qn", N, H*D), al.inner("kn", N, KV*D)
			la.rstdQ, la.rstdK = al.t(tensor.Float32, N*H), al.t(tensor.Float32, N*KV)
		}
		la.qr, la.kr, la.qkv = al.inner("qr", N, H*D), al.inner("kr", N, KV*D), al.inner("qkv", N, 3*H*D)
		la.att, la.atty = al.t(tensor.Float32, attSaved), al.inner("atty", N, H*D)
		la.o, la.x2 = al.inner("o", N, C), al.inner("x2", N, C)
		if a.recompute {
			la.h2 = al.sharedValue(shared.h2, "h2", N, C)
		} else {
			la.h2 = al.inner("h2", N, C)
		}
		la.rstd2 = al.t(tensor.Float32, N)
		la.gate, la.up = al.inner("gate", N, I), al.inner("up", N, I)
		if a.recompute {
			la.act = al.sharedValue(shared.act, "act", N, I)
		} else {
			la.act = al.inner("act", N, I)
		}
		la.down, la.x3 = al.inner("down", N, C), al.v(N, C)
		if lo != nil {
			la.allocLoRA(al, c, lo, N, withGrad)
		}
	}
	a.final, a.finalRstd = al.v(N, C), al.t(tensor.Float32, N)
	a.losses = al.v(N)
	a.attScratch = al.t(tensor.Float32, attScratch)
}

// zeroGrads clears the activation gradients before a backward pass, but the layer-shared ones,
// which the backward clears before each layer.
func (a *activations) zeroGrads(be tensor.Backend) {
	for _, v := range a.all {
		if v.Grad != nil {
			be.Fill(v.Grad, 0)
		}
	}
	for _, g := range a.ownGrads {
		be.Fill(g, 0)
	}
}

func (a *activations) free(be tensor.Backend) {
	for _, v := range a.all {
		be.Free(v.Value.Storage)
		if v.Grad != nil {
			be.Free(v.Grad.Storage)
		}
	}
	for _, t := range a.owned {
		be.Free(t.Storage)
	}
	a.all, a.owned, a.ownGrads = nil, nil, nil
}

// bindLogits allocates the full logits on first use.
func (a *activations) bindLogits(be tensor.Backend, c Config) error {
	if a.logits != nil {
		return nil
	}
	al := &alloc{a: a, be: be}
	a.logits = al.v(a.B*a.T, c.Vocab)
	return al.err
}

// allocLoRA lays out a layer's adapter activations (and dropout buffers when training drops).
func (la *layerActs) allocLoRA(al *alloc, c Config, lo *lora, N int, withGrad bool) {
	la.lora, la.loraIn = map[string]*loraActs{}, map[string]*loraInput{}
	for _, mod := range lo.cfg.targets() {
		la.lora[mod] = &loraActs{xa: al.inner(mod+".xa", N, lo.cfg.Rank), xas: al.inner(mod+".xas", N, lo.cfg.Rank)}
		in := loraInputOf(mod)
		if lo.cfg.Dropout > 0 && withGrad && la.loraIn[in] == nil {
			_, width := c.moduleShape(mod)
			la.loraIn[in] = &loraInput{dropped: al.inner(in+".dropped", N, width), mask: al.t(tensor.Float32, N, width)}
		}
	}
}
