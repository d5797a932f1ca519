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
	// VocabSize is the number of token ids the policy's distribution covers (LimitVocab).
	VocabSize() int
	// MaxSeqLen is the longest sequence, prompt and completion, a rollout may reach.
	MaxSeqLen() int
	// Width is the hidden state's width, the input of a value head.
	Width() int
	// NumParams is the number of trained parameters, the length of Params and Grads.
	NumParams() int
	// Params and Grads are the flat buffers of what trains (the adapters of a LoRA model) and
	// their gradients (nil until EnableGrads).
	Params() *tensor.Flat
	Grads() *tensor.Flat
	EnableGrads() error
	ZeroGrad()
	// ZeroTrunkGrads clears the gradients of the activations ForwardTrunk records.
	ZeroTrunkGrads()
	// ForwardTrunk runs the model up to its final hidden states on B rows of T tokens.
	ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error
	NewSelectedHead() SelectedHead
	// NewDecoder returns a KV-cache decoder for B rows of up to limit positions.
	NewDecoder(B, limit int) (Decoder, error)

	// reference returns the frozen reference model: a copy with the same parameters, or for a
	// LoRA model the shared base with its adapters off (shared set).
	reference() (ref Policy, shared bool, err error)
	// footprint fills in f's parts for its rows and positions (see EstimateFootprint).
	footprint(f *Footprint, newTok, limit int, reference bool) error
	// validate says whether the trainers can drive the model as it is set up.
	validate() error
	// stateParams are the values a checkpoint holds (for LoRA, the base weights and then the
	// adapters); setStateParams restores them.
	stateParams() ([]float32, error)
	setStateParams([]float32) error
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
func (p *GPT2Policy) VocabSize() int          { return p.Model.TokenVocab() }
func (p *GPT2Policy) MaxSeqLen() int          { return p.Model.Config.MaxSeqLen }
func (p *GPT2Policy) Width() int              { return p.Model.Config.Channels }
func (p *GPT2Policy) NumParams() int          { return p.Model.Config.NumParams() }
func (p *GPT2Policy) Params() *tensor.Flat    { return p.Model.Params }
func (p *GPT2Policy) Grads() *tensor.Flat     { return p.Model.Grads }
func (p *GPT2Policy) ZeroGrad()               { p.Model.ZeroGrad() }
func (p *GPT2Policy) ZeroTrunkGrads()         { p.Model.ZeroTrunkGrads() }

// EnableGrads allocates the gradients, and has every forward lay its activations out with
// theirs: the trainers evaluate and then train at one shape, so they are allocated once.
func (p *GPT2Policy) EnableGrads() error {
	p.Model.ActsWithGrads = true
	return p.Model.EnableGrads()
}

func (p *GPT2Policy) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return p.Model.ForwardTrunk(tp, inputs, B, T)
}

func (p *GPT2Policy) NewSelectedHead() SelectedHead { return p.Model.NewSelectedHead() }

func (p *GPT2Policy) NewDecoder(B, limit int) (Decoder, error) { return p.Model.NewDecoder(B, limit) }

func (p *GPT2Policy) reference() (Policy, bool, error) {
	m, err := gpt2.New(p.Model.Backend, p.Model.Config)
	if err != nil {
		return nil, false, err
	}
	if err := m.LimitVocab(p.Model.TokenVocab()); err != nil {
		return nil, false, err
	}
	// The reference runs before the policy's recorded forward, never between it and its
	// backward, so the two can take turns with one set of activations.
	if err := m.ShareActivations(p.Model); err != nil {
		return nil, false, err
	}
	q := GPT2(m)
	return q, false, copyParams(q, p)
}

func (p *GPT2Policy) validate() error                  { return nil }
func (p *GPT2Policy) stateParams() ([]float32, error)  { return paramsToHost(p) }
func (p *GPT2Policy) setStateParams(v []float32) error { return setParams(p, v) }

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

// LlamaPolicy drives a Llama-family model (Llama, Qwen2, Qwen3): every weight trains, or only
// its LoRA adapters when it has them (llama.Model.EnableLoRA), and then the reference model is
// the same base with the adapters off, sharing its memory.
type LlamaPolicy struct {
	Model *llama.Model
	// MaxLen caps MaxSeqLen below the model's max_position_embeddings (0: no cap), which
	// reaches 32k-128k positions that a rollout never needs.
	MaxLen int
}

// Llama wraps m as a Policy.
func Llama(m *llama.Model) *LlamaPolicy { return &LlamaPolicy{Model: m} }

func (p *LlamaPolicy) Backend() tensor.Backend { return p.Model.Backend }
func (p *LlamaPolicy) VocabSize() int          { return p.Model.TokenVocab() }
func (p *LlamaPolicy) Width() int              { return p.Model.Config.Hidden }
func (p *LlamaPolicy) NumParams() int          { return p.Params().Len() }
func (p *LlamaPolicy) ZeroGrad()               { p.Model.ZeroTrainableGrads() }
func (p *LlamaPolicy) ZeroTrunkGrads()         { p.Model.ZeroTrunkGrads() }

func (p *LlamaPolicy) lora() bool {
	_, ok := p.Model.LoRA()
	return ok
}

func (p *LlamaPolicy) Params() *tensor.Flat {
	params, _ := p.Model.Trainable()
	return params
}

func (p *LlamaPolicy) Grads() *tensor.Flat {
	_, grads := p.Model.Trainable()
	return grads
}

// EnableGrads allocates the gradients of every weight; a LoRA model's adapters have theirs.
func (p *LlamaPolicy) EnableGrads() error {
	if p.lora() {
		return nil
	}
	return p.Model.EnableGrads()
}

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

func (p *LlamaPolicy) reference() (Policy, bool, error) {
	if p.lora() {
		return &baseOf{p}, true, nil
	}
	m, err := llama.New(p.Model.Backend, p.Model.Config)
	if err != nil {
		return nil, false, err
	}
	if err := m.LimitVocab(p.Model.TokenVocab()); err != nil {
		return nil, false, err
	}
	q := &LlamaPolicy{Model: m, MaxLen: p.MaxLen}
	return q, false, copyParams(q, p)
}

// validate refuses LoRA dropout: it would make the training-time log-probs differ from those the
// tokens were sampled with, and its masks are not part of a checkpoint.
func (p *LlamaPolicy) validate() error {
	if lc, ok := p.Model.LoRA(); ok && lc.Dropout != 0 {
		return fmt.Errorf("lora dropout %v: the trainers need 0 (dropout makes the trained log-probs differ from the sampled ones)", lc.Dropout)
	}
	return nil
}

func (p *LlamaPolicy) stateParams() ([]float32, error) { return p.Model.StateParams() }

func (p *LlamaPolicy) setStateParams(v []float32) error { return p.Model.SetStateParams(v) }

func (p *LlamaPolicy) describeIn(st *checkpoint.State) {
	c := p.Model.Config
	st.Llama = &c
	if lc, ok := p.Model.LoRA(); ok {
		st.LoRA = &lc
	}
}

func (p *LlamaPolicy) matches(st *checkpoint.State) error {
	if st.Llama == nil {
		return fmt.Errorf("checkpoint holds a GPT-2, the policy is a %s model", p.Model.Config.Architecture)
	}
	if d := diffJSON("model", *st.Llama, p.Model.Config, nil); d != "" {
		return fmt.Errorf("%s", d)
	}
	lc, ok := p.Model.LoRA()
	switch {
	case ok != (st.LoRA != nil):
		return fmt.Errorf("checkpoint has LoRA adapters: %v, the policy: %v", st.LoRA != nil, ok)
	case ok:
		if d := diffJSON("lora", *st.LoRA, lc, nil); d != "" {
			return fmt.Errorf("%s", d)
		}
	}
	return nil
}

// baseOf is a LoRA policy's reference: the same model with its adapters off, sharing the base
// weights and activations (a reference forward runs before the policy's recorded one).
type baseOf struct{ p *LlamaPolicy }

func (b *baseOf) Backend() tensor.Backend { return b.p.Backend() }
func (b *baseOf) VocabSize() int          { return b.p.VocabSize() }
func (b *baseOf) MaxSeqLen() int          { return b.p.MaxSeqLen() }
func (b *baseOf) Width() int              { return b.p.Width() }
func (b *baseOf) NumParams() int          { return 0 }
func (b *baseOf) Params() *tensor.Flat    { return nil }
func (b *baseOf) Grads() *tensor.Flat     { return nil }
func (b *baseOf) EnableGrads() error      { return nil }
func (b *baseOf) ZeroGrad()               {}
func (b *baseOf) ZeroTrunkGrads()         {}

func (b *baseOf) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	if tp.Recording() {
		return fmt.Errorf("the reference model does not train")
	}
	b.p.Model.SetAdapters(false)
	defer b.p.Model.SetAdapters(true)
	return b.p.Model.ForwardTrunk(nil, inputs, B, T)
}

func (b *baseOf) NewSelectedHead() SelectedHead { return b.p.Model.NewSelectedHead() }

func (b *baseOf) NewDecoder(B, limit int) (Decoder, error) {
	return nil, fmt.Errorf("the reference model does not sample")
}

func (b *baseOf) reference() (Policy, bool, error) { return b, true, nil }
func (b *baseOf) validate() error                  { return nil }
func (b *baseOf) stateParams() ([]float32, error)  { return nil, nil }
func (b *baseOf) setStateParams([]float32) error   { return nil }
func (b *baseOf) describeIn(*checkpoint.State)     {}
func (b *baseOf) matches(*checkpoint.State) error  { return nil }

// SetParams uploads a policy's values as a checkpoint holds them (checkpoint.State.Params: for a
// LoRA model the base weights and then the adapters).
func SetParams(p Policy, values []float32) error { return p.setStateParams(values) }

// paramsToHost downloads a policy's parameters.
func paramsToHost(p Policy) ([]float32, error) { return p.Params().ToHost() }

// setParams uploads a flat parameter buffer into a policy.
func setParams(p Policy, v []float32) error {
	if len(v) != p.NumParams() {
		return fmt.Errorf("%d parameter values for a model of %d", len(v), p.NumParams())
	}
	return p.Params().Upload(v)
}

func copyParams(dst, src Policy) error {
	v, err := paramsToHost(src)
	if err != nil {
		return err
	}
	return setParams(dst, v)
}
