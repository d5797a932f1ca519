package gpt2

import (
	"errors"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/internal/tokenids"
	"github.com/vkgrad/vkgrad/tensor"
)

// Model is GPT-2 on one backend. Parameters form one flat vector in llm.c order (so the
// optimizer and gradient clipping are a few fused passes), in as few allocations as the device
// allows with no layer's tensor split between two; gradients, when enabled, mirror it.
type Model struct {
	Config  Config
	Backend tensor.Backend

	Params *tensor.Flat // NumParams elements
	Grads  *tensor.Flat // nil until EnableGrads

	wte, wpe, lnfw, lnfb *autograd.Var
	layers               []layerParams
	params               []*autograd.Var // the above, each once

	// HeadChunkRows, when positive, is the number of rows SelectedHead computes the lm head
	// for at a time (default: as many as fit 64 MiB of logits).
	HeadChunkRows int

	// ActsWithGrads lays activations out with room for their gradients even for a forward
	// that records nothing, so a model that alternates evaluation and training passes at one
	// shape (an RL policy) allocates them once instead of twice.
	ActsWithGrads bool

	// Recompute keeps one ln1, one ln2 and one GELU output that every layer overwrites, instead
	// of each layer's, and has the backward recompute a layer's just before the op that reads
	// them (llm.c's recompute): (L-1)·6·C floats less per token, the same bits, for a layernorm
	// and a GELU more per layer in the backward. It takes effect at the next forward pass.
	Recompute bool

	// LossScale multiplies the loss gradient Backward propagates, so that small gradients
	// survive products with 16-bit operands (loss scaling); 0 or 1: none. The caller divides
	// the parameter gradients by it again.
	LossScale float32

	acts *activations // sized for the last (B, T); reallocated when they grow
	peer *Model       // shares acts (ShareActivations)
	loss *lossHead    // ForwardCrossEntropy's chunks when the whole head is larger (chunkedLoss)

	tokenVocab tokenids.Limit // ids the distribution covers (LimitVocab)

	gradsFinal func(ranges [][2]int) // see OnGradsFinal
}

type layerParams struct {
	ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb *autograd.Var
}

func (lp *layerParams) vars() []*autograd.Var {
	return []*autograd.Var{lp.ln1w, lp.ln1b, lp.qkvw, lp.qkvb, lp.attprojw, lp.attprojb, lp.ln2w, lp.ln2b, lp.fcw, lp.fcb, lp.fcprojw, lp.fcprojb}
}

// bindParamVars lists the parameter Vars, each once.
func (m *Model) bindParamVars() {
	m.params = append(m.params[:0], m.wte, m.wpe, m.lnfw, m.lnfb)
	for l := range m.layers {
		m.params = append(m.params, m.layers[l].vars()...)
	}
}

// New allocates a model with zeroed parameters on b.
func New(b tensor.Backend, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sizes, names := cfg.paramPieces()
	params, err := tensor.NewFlat(b, sizes)
	if big := (*tensor.PieceTooLargeError)(nil); errors.As(err, &big) {
		err = big.Named(names[big.Index])
	}
	if err != nil {
		return nil, fmt.Errorf("gpt2: allocating %d parameters: %w", cfg.NumParams(), err)
	}
	m := &Model{Config: cfg, Backend: b, Params: params}
	m.bindViews()
	return m, nil
}

// EnableGrads allocates the flat gradient buffer (zeroed) so Backward can run.
func (m *Model) EnableGrads() error {
	if m.Grads != nil {
		return nil
	}
	g, err := tensor.NewFlatLike(m.Params)
	if err != nil {
		return fmt.Errorf("gpt2: allocating gradients: %w", err)
	}
	m.Grads = g
	m.bindViews()
	return nil
}

// bindViews (re)creates the per-tensor and per-layer views into Params and Grads.
func (m *Model) bindViews() {
	specs := m.Config.ParamSpecs()
	offs := make([]int, len(specs))
	for i, off := 1, 0; i < len(specs); i++ {
		off += specs[i-1].Numel()
		offs[i] = off
	}
	// view is spec i's tensor, or layer l's slice of it for the per-layer specs.
	view := func(i, l int, shape ...int) *autograd.Var {
		off := offs[i] + l*tensor.Shape(shape).Numel()
		v := &autograd.Var{Value: m.Params.View(off, shape...)}
		if m.Grads != nil {
			v.Grad = m.Grads.View(off, shape...)
		}
		return v
	}
	L, C, Vp, T := m.Config.NumLayers, m.Config.Channels, m.Config.PaddedVocabSize, m.Config.MaxSeqLen
	m.wte, m.wpe, m.lnfw, m.lnfb = view(0, 0, Vp, C), view(1, 0, T, C), view(14, 0, C), view(15, 0, C)
	m.layers = make([]layerParams, L)
	for l := range m.layers {
		m.layers[l] = layerParams{
			ln1w: view(2, l, C), ln1b: view(3, l, C),
			qkvw: view(4, l, 3*C, C), qkvb: view(5, l, 3*C),
			attprojw: view(6, l, C, C), attprojb: view(7, l, C),
			ln2w: view(8, l, C), ln2b: view(9, l, C),
			fcw: view(10, l, 4*C, C), fcb: view(11, l, 4*C),
			fcprojw: view(12, l, C, 4*C), fcprojb: view(13, l, C),
		}
	}
	m.bindParamVars()
}

// SetParams uploads a flat parameter vector in llm.c order.
func (m *Model) SetParams(p []float32) error {
	if len(p) != m.Config.NumParams() {
		return fmt.Errorf("gpt2: %d parameter values for a model of %d (%v)", len(p), m.Config.NumParams(), m.Config)
	}
	return m.Params.Upload(p)
}

// ParamsToHost downloads the flat parameter vector.
func (m *Model) ParamsToHost() ([]float32, error) { return m.Params.ToHost() }

// GradsToHost downloads the flat gradient vector.
func (m *Model) GradsToHost() ([]float32, error) {
	if m.Grads == nil {
		return nil, fmt.Errorf("gpt2: gradients are not enabled")
	}
	return m.Grads.ToHost()
}

// InitRandom draws GPT-2's initialisation from seed: weights N(0, 0.02), the two residual
// projections N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1, padded vocabulary rows 0.
func (m *Model) InitRandom(seed uint64) error {
	cfg := m.Config
	r := rng.New(seed)
	p := make([]float32, cfg.NumParams())
	off := 0
	resid := 0.02 / math.Sqrt(2*float64(cfg.NumLayers))
	for _, s := range cfg.ParamSpecs() {
		dst := p[off : off+s.Numel()]
		switch s.Name {
		case "ln1w", "ln2w", "lnfw":
			for i := range dst {
				dst[i] = 1
			}
		case "wte":
			for i := 0; i < cfg.VocabSize*cfg.Channels; i++ {
				dst[i] = float32(0.02 * r.Normal())
			}
		case "wpe", "qkvw", "fcw":
			for i := range dst {
				dst[i] = float32(0.02 * r.Normal())
			}
		case "attprojw", "fcprojw":
			for i := range dst {
				dst[i] = float32(resid * r.Normal())
			}
		}
		off += s.Numel()
	}
	return m.SetParams(p)
}

// ParamTensor returns the view of one named parameter tensor (llm.c names); a per-layer tensor
// that the device's allocation limit split between allocations has no single view.
func (m *Model) ParamTensor(name string) (*tensor.Tensor, error) {
	off := 0
	for _, s := range m.Config.ParamSpecs() {
		if s.Name == name {
			if r := m.Params.Range(off, s.Numel()); len(r) > 1 {
				return nil, fmt.Errorf("gpt2: parameter %q lies in %d allocations", name, len(r))
			}
			return m.Params.View(off, s.Shape...), nil
		}
		off += s.Numel()
	}
	return nil, fmt.Errorf("gpt2: no parameter named %q", name)
}
