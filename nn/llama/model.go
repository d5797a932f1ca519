package llama

import (
	"errors"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/internal/tokenids"
	"github.com/vkgrad/vkgrad/tensor"
)

// Model is a Llama-family causal language model on one backend. Parameters form one flat
// vector (ParamSpecs order), so the optimizer is a few fused passes, held in as few allocations
// as the device allows with no tensor split between two; gradients mirror it.
type Model struct {
	Config  Config
	Backend tensor.Backend

	Params *tensor.Flat
	Grads  *tensor.Flat // nil until EnableGrads

	embed, norm, head *autograd.Var
	layers            []layerParams

	// HeadChunkRows, when positive, is the number of rows the lm head computes at a time in
	// ForwardLoss (default: as many as fit 64 MiB of logits).
	HeadChunkRows int

	// Recompute keeps one input-norm output, one MLP-norm output and one SwiGLU product that
	// every layer overwrites, instead of each layer's, and has the backward recompute a
	// layer's just before the products that read them: (L-1)·(2·Hidden+Intermediate) floats
	// less per token, the same bits, for two norms and a SwiGLU more per layer in the
	// backward. It takes effect at the next forward pass.
	Recompute bool

	// LossScale multiplies the loss gradient Backward propagates, so that small gradients
	// survive products with 16-bit operands (loss scaling); 0 or 1: none. The caller divides
	// the parameter gradients by it again.
	LossScale float32

	tokenVocab tokenids.Limit // ids the distribution covers (LimitVocab)

	lora    *lora          // adapters, when EnableLoRA was called
	head1   *headChunks    // the lm head's chunk buffers of the last ForwardLoss
	rope    *tensor.Tensor // cos/sin table of ropeLen positions
	ropeLen int
	acts    *activations
	peer    *Model // shares acts (ShareActivations)
}

type layerParams struct {
	attnNorm, wq, bq, wk, bk, wv, bv, qNorm, kNorm, wo, mlpNorm, wgate, wup, wdown *autograd.Var
}

// New allocates a model with zeroed parameters on b.
func New(b tensor.Backend, cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	specs := cfg.ParamSpecs()
	params, err := tensor.NewFlat(b, specSizes(specs))
	if big := (*tensor.PieceTooLargeError)(nil); errors.As(err, &big) {
		err = big.Named(specs[big.Index].Name)
	}
	if err != nil {
		return nil, fmt.Errorf("llama: allocating %d parameters: %w", cfg.NumParams(), err)
	}
	m := &Model{Config: cfg, Backend: b, Params: params}
	m.bindViews()
	return m, nil
}

// Load reads a Hugging Face model directory onto b.
func Load(b tensor.Backend, dir string) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	w, err := LoadWeights(dir, cfg)
	if err != nil {
		return nil, err
	}
	m, err := New(b, cfg)
	if err != nil {
		return nil, err
	}
	flat := make([]float32, cfg.NumParams())
	for _, s := range cfg.ParamSpecs() {
		copy(flat[s.Offset:s.Offset+s.Numel()], w[s.Name].Data)
	}
	if err := m.Params.Upload(flat); err != nil {
		return nil, err
	}
	return m, nil
}

// EnableGrads allocates the flat gradient buffer (zeroed) so Backward can run.
func (m *Model) EnableGrads() error {
	if m.Grads != nil {
		return nil
	}
	g, err := tensor.NewFlatLike(m.Params)
	if err != nil {
		return fmt.Errorf("llama: allocating gradients: %w", err)
	}
	m.Grads = g
	m.bindViews()
	return nil
}

// ZeroGrad clears the parameter gradients.
func (m *Model) ZeroGrad() {
	if m.Grads != nil {
		m.Grads.Fill(0)
	}
}

// bindViews (re)creates the named views into Params and Grads.
func (m *Model) bindViews() {
	vars := map[string]*autograd.Var{}
	for _, s := range m.Config.ParamSpecs() {
		v := &autograd.Var{Value: m.Params.View(s.Offset, s.Shape...)}
		if m.Grads != nil {
			v.Grad = m.Grads.View(s.Offset, s.Shape...)
		}
		vars[s.Name] = v
	}
	c := m.Config
	m.embed, m.norm, m.head = vars["model.embed_tokens.weight"], vars["model.norm.weight"], vars["lm_head.weight"]
	if c.TieEmbeddings {
		m.head = m.embed
	}
	m.layers = make([]layerParams, c.Layers)
	for l := range m.layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		m.layers[l] = layerParams{
			attnNorm: vars[p+"input_layernorm.weight"],
			wq:       vars[p+"self_attn.q_proj.weight"], bq: vars[p+"self_attn.q_proj.bias"],
			wk: vars[p+"self_attn.k_proj.weight"], bk: vars[p+"self_attn.k_proj.bias"],
			wv: vars[p+"self_attn.v_proj.weight"], bv: vars[p+"self_attn.v_proj.bias"],
			qNorm: vars[p+"self_attn.q_norm.weight"], kNorm: vars[p+"self_attn.k_norm.weight"],
			wo: vars[p+"self_attn.o_proj.weight"], mlpNorm: vars[p+"post_attention_layernorm.weight"],
			wgate: vars[p+"mlp.gate_proj.weight"], wup: vars[p+"mlp.up_proj.weight"], wdown: vars[p+"mlp.down_proj.weight"],
		}
	}
}

// ensureRope makes the cos/sin table cover positions 0..n-1: angles in float64 from
// Config.InvFreq, rounded once to float32.
func (m *Model) ensureRope(n int) error {
	if n <= m.ropeLen {
		return nil
	}
	D := m.Config.HeadDim
	inv := m.Config.InvFreq()
	data := make([]float32, n*D)
	for p := range n {
		for i, f := range inv {
			a := float64(p) * f
			data[p*D+i], data[p*D+D/2+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	t, err := tensor.FromSlice(m.Backend, data, n, D)
	if err != nil {
		return fmt.Errorf("llama: rotary table for %d positions: %w", n, err)
	}
	if m.rope != nil {
		m.Backend.Free(m.rope.Storage)
	}
	m.rope, m.ropeLen = t, n
	return nil
}

// checkTokens reports a batch ids that is not B*T long or that holds an id outside the
// vocabulary; what names the argument in the error.
func (m *Model) checkTokens(what string, ids []int32, B, T int) error {
	if err := tokenids.Check(what, ids, B, T, m.Config.Vocab); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}
