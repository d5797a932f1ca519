package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
)

// Policy is a causal language model the trainers drive: a GPT-2 (GPT2) or a Llama-family model
// (Llama). Its parameters are one flat buffer, so the optimizer is one fused pass.
type Policy interface {
	Backend() tensor.Backend
	VocabSize() int
	// MaxSeqLen is the longest sequence, prompt and completion, a rollout may reach.
	MaxSeqLen() int
	// Width is the hidden state's width, the input of a value head.
	Width() int
	NumParams() int
	// Params and Grads are the flat parameter and gradient buffers (Grads nil until EnableGrads).
	Params() *tensor.Tensor
	Grads() *tensor.Tensor
	EnableGrads() error
	ZeroGrad()
	// ZeroTrunkGrads clears the gradients of the activations ForwardTrunk records.
	ZeroTrunkGrads()
	// ForwardTrunk runs the model up to its final hidden states on B rows of T tokens.
	ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error
	NewSelectedHead() SelectedHead
	// NewDecoder returns a KV-cache decoder for B rows of up to limit positions.
	NewDecoder(B, limit int) (Decoder, error)

	// clone returns a model of the same shape on the same backend with the same parameters.
	clone() (Policy, error)
	// describeIn records the model's shape in a checkpoint state; matches checks one.
	describeIn(st *checkpoint.State)
	matches(st *checkpoint.State) error
}

// SelectedHead computes log-probs and entropies at chosen positions of the last ForwardTrunk
// (gpt2.SelectedHead, llama.SelectedHead).
type SelectedHead interface {
	Forward(tp *autograd.Tape, positions []int, targets []int32, cutoffs []float32, temperature float32) (logp, entropy *autograd.Var, err error)
	// Hidden is the gathered hidden states (n, Width) of the last Forward.
	Hidden(n int) *autograd.Var
	Free()
}

// Decoder is a sampling decoder that holds device memory until closed.
type Decoder interface {
	sample.Decoder
	Close()
}

// GPT2Policy drives a GPT-2.
type GPT2Policy struct{ Model *gpt2.Model }

// GPT2 wraps m as a Policy.
func GPT2(m *gpt2.Model) *GPT2Policy { return &GPT2Policy{Model: m} }

func (p *GPT2Policy) Backend() tensor.Backend { return p.Model.Backend }
func (p *GPT2Policy) VocabSize() int          { return p.Model.Config.VocabSize }
func (p *GPT2Policy) MaxSeqLen() int          { return p.Model.Config.MaxSeqLen }
func (p *GPT2Policy) Width() int              { return p.Model.Config.Channels }
func (p *GPT2Policy) NumParams() int          { return p.Model.Config.NumParams() }
func (p *GPT2Policy) Params() *tensor.Tensor  { return p.Model.Params }
func (p *GPT2Policy) Grads() *tensor.Tensor   { return p.Model.Grads }
func (p *GPT2Policy) EnableGrads() error      { return p.Model.EnableGrads() }
func (p *GPT2Policy) ZeroGrad()               { p.Model.ZeroGrad() }
func (p *GPT2Policy) ZeroTrunkGrads()         { p.Model.ZeroTrunkGrads() }

func (p *GPT2Policy) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return p.Model.ForwardTrunk(tp, inputs, B, T)
}

func (p *GPT2Policy) NewSelectedHead() SelectedHead { return p.Model.NewSelectedHead() }

func (p *GPT2Policy) NewDecoder(B, limit int) (Decoder, error) { return p.Model.NewDecoder(B, limit) }

func (p *GPT2Policy) clone() (Policy, error) {
	m, err := gpt2.New(p.Model.Backend, p.Model.Config)
	if err != nil {
		return nil, err
	}
	q := GPT2(m)
	return q, copyParams(q, p)
}

func (p *GPT2Policy) describeIn(st *checkpoint.State) { st.Config = p.Model.Config }

func (p *GPT2Policy) matches(st *checkpoint.State) error {
	if st.Llama != nil {
		return fmt.Errorf("checkpoint holds a %s model, the policy is a GPT-2", st.Llama.Architecture)
	}
	if st.Config != p.Model.Config {
		return fmt.Errorf("%s", diffJSON("model", st.Config, p.Model.Config, nil))
	}
	return nil
}

// LlamaPolicy drives a Llama-family model (Llama, Qwen2, Qwen3), all of its parameters trained.
type LlamaPolicy struct {
	Model *llama.Model
	// MaxLen caps MaxSeqLen below the model's max_position_embeddings (0: no cap), which
	// reaches 32k-128k positions that a rollout never needs.
	MaxLen int
}

// Llama wraps m as a Policy.
func Llama(m *llama.Model) *LlamaPolicy { return &LlamaPolicy{Model: m} }

func (p *LlamaPolicy) Backend() tensor.Backend { return p.Model.Backend }
func (p *LlamaPolicy) VocabSize() int          { return p.Model.Config.Vocab }
func (p *LlamaPolicy) Width() int              { return p.Model.Config.Hidden }
func (p *LlamaPolicy) NumParams() int          { return p.Model.Config.NumParams() }
func (p *LlamaPolicy) Params() *tensor.Tensor  { return p.Model.Params }
func (p *LlamaPolicy) Grads() *tensor.Tensor   { return p.Model.Grads }
func (p *LlamaPolicy) EnableGrads() error      { return p.Model.EnableGrads() }
func (p *LlamaPolicy) ZeroGrad()               { p.Model.ZeroGrad() }
func (p *LlamaPolicy) ZeroTrunkGrads()         { p.Model.ZeroTrunkGrads() }

func (p *LlamaPolicy) MaxSeqLen() int {
	n := p.Model.Config.MaxPositions
	if p.MaxLen > 0 && (n <= 0 || p.MaxLen < n) {
		n = p.MaxLen
	}
	return n
}

func (p *LlamaPolicy) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return p.Model.ForwardTrunk(tp, inputs, B, T)
}

func (p *LlamaPolicy) NewSelectedHead() SelectedHead { return p.Model.NewSelectedHead() }

func (p *LlamaPolicy) NewDecoder(B, limit int) (Decoder, error) { return p.Model.NewDecoder(B, limit) }

func (p *LlamaPolicy) clone() (Policy, error) {
	if _, ok := p.Model.LoRA(); ok {
		return nil, fmt.Errorf("a reference copy of a model with LoRA adapters is not supported; merge them first")
	}
	m, err := llama.New(p.Model.Backend, p.Model.Config)
	if err != nil {
		return nil, err
	}
	q := &LlamaPolicy{Model: m, MaxLen: p.MaxLen}
	return q, copyParams(q, p)
}

func (p *LlamaPolicy) describeIn(st *checkpoint.State) {
	c := p.Model.Config
	st.Llama = &c
}

func (p *LlamaPolicy) matches(st *checkpoint.State) error {
	if st.Llama == nil {
		return fmt.Errorf("checkpoint holds a GPT-2, the policy is a %s model", p.Model.Config.Architecture)
	}
	if d := diffJSON("model", *st.Llama, p.Model.Config, nil); d != "" {
		return fmt.Errorf("%s", d)
	}
	return nil
}

// paramsToHost downloads a policy's parameters.
func paramsToHost(p Policy) ([]float32, error) { return tensor.ToHost(p.Params()) }

// setParams uploads a flat parameter buffer into a policy.
func setParams(p Policy, v []float32) error {
	if len(v) != p.NumParams() {
		return fmt.Errorf("%d parameter values for a model of %d", len(v), p.NumParams())
	}
	return p.Backend().Upload(p.Params(), v)
}

func copyParams(dst, src Policy) error {
	v, err := paramsToHost(src)
	if err != nil {
		return err
	}
	return setParams(dst, v)
}
