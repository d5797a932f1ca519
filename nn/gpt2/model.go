package gpt2

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/tensor"
)

// Model is GPT-2 on one backend. Parameters live in one flat buffer in llm.c order (so the
// optimizer and gradient clipping are single fused passes); gradients, when enabled, mirror it.
type Model struct {
	Config  Config
	Backend tensor.Backend

	Params *tensor.Tensor // flat, NumParams elements
	Grads  *tensor.Tensor // flat, nil until EnableGrads

	wte, wpe, lnfw, lnfb *autograd.Var
	layers               []layerParams

	acts *activations // sized for the last (B, T); reallocated when they grow
}

type layerParams struct {
	ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb *autograd.Var
}

// New allocates a model with zeroed parameters on b.
func New(b tensor.Backend, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	params, err := tensor.New(b, tensor.Float32, cfg.NumParams())
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
	g, err := tensor.New(m.Backend, tensor.Float32, m.Config.NumParams())
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
	whole := make([]*autograd.Var, len(specs))
	off := 0
	for i, s := range specs {
		v := &autograd.Var{Value: m.Params.View(off, s.Shape...)}
		if m.Grads != nil {
			v.Grad = m.Grads.View(off, s.Shape...)
		}
		whole[i] = v
		off += s.Numel()
	}
	m.wte, m.wpe, m.lnfw, m.lnfb = whole[0], whole[1], whole[14], whole[15]
	L, C := m.Config.NumLayers, m.Config.Channels
	layer := func(v *autograd.Var, l int, shape ...int) *autograd.Var {
		n := tensor.Shape(shape).Numel()
		return v.View(l*n, shape...)
	}
	m.layers = make([]layerParams, L)
	for l := range m.layers {
		m.layers[l] = layerParams{
			ln1w: layer(whole[2], l, C), ln1b: layer(whole[3], l, C),
			qkvw: layer(whole[4], l, 3*C, C), qkvb: layer(whole[5], l, 3*C),
			attprojw: layer(whole[6], l, C, C), attprojb: layer(whole[7], l, C),
			ln2w: layer(whole[8], l, C), ln2b: layer(whole[9], l, C),
			fcw: layer(whole[10], l, 4*C, C), fcb: layer(whole[11], l, 4*C),
			fcprojw: layer(whole[12], l, C, 4*C), fcprojb: layer(whole[13], l, C),
		}
	}
}

// SetParams uploads a flat parameter vector in llm.c order.
func (m *Model) SetParams(p []float32) error {
	if len(p) != m.Config.NumParams() {
		return fmt.Errorf("gpt2: %d parameter values for a model of %d (%v)", len(p), m.Config.NumParams(), m.Config)
	}
	return m.Backend.Upload(m.Params, p)
}

// ParamsToHost downloads the flat parameter vector.
func (m *Model) ParamsToHost() ([]float32, error) { return tensor.ToHost(m.Params) }

// GradsToHost downloads the flat gradient vector.
func (m *Model) GradsToHost() ([]float32, error) {
	if m.Grads == nil {
		return nil, fmt.Errorf("gpt2: gradients are not enabled")
	}
	return tensor.ToHost(m.Grads)
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

// ParamTensor returns the view of one named parameter tensor (llm.c names).
func (m *Model) ParamTensor(name string) (*tensor.Tensor, error) {
	off := 0
	for _, s := range m.Config.ParamSpecs() {
		if s.Name == name {
			return m.Params.View(off, s.Shape...), nil
		}
		off += s.Numel()
	}
	return nil, fmt.Errorf("gpt2: no parameter named %q", name)
}
