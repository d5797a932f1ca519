package train

import (
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/tensor"
)

// model is what a Trainer drives: a GPT-2 or a Llama-family model.
type model interface {
	LossModel
	backend() tensor.Backend
	maxSeqLen() int
	vocabSize() int
	// trainable are the flat buffers the optimizer updates (a LoRA model's adapters) and their
	// gradients, with the names of their tensors for error messages.
	trainable() (params, grads *tensor.Flat)
	trainableSpecs() []tensorSpec
	enableGrads() error
	zeroGrad()
	// ForwardCrossEntropy records the forward of B×T tokens and leaves the per-token losses in
	// Losses; Backward back-propagates their mean.
	ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error
	Losses() *tensor.Tensor
	Backward(tp *autograd.Tape) error
	// onGradsFinal has Backward report ranges of the gradient as they become final (from the
	// next forward pass; nil stops it). A model may report none: all are final after Backward.
	onGradsFinal(f func(ranges [][2]int))
	// stateParams are the values a checkpoint holds; setStateParams restores them.
	stateParams() ([]float32, error)
	setStateParams([]float32) error
	describeIn(st *checkpoint.State)
	matches(st *checkpoint.State) error
}

// tensorSpec names one tensor of a flat buffer; vector marks a bias or a norm's weight (a
// matrix per layer in llm.c's stacked layout, still one vector a layer).
type tensorSpec struct {
	name   string
	numel  int
	vector bool
}

// vectorSpans are the runs of the flat buffer that hold biases and norm weights.
func vectorSpans(specs []tensorSpec) []optim.Span {
	var out []optim.Span
	off := 0
	for _, s := range specs {
		if s.vector {
			out = append(out, optim.Span{Off: off, N: s.numel})
		}
		off += s.numel
	}
	return out
}

// gpt2Model drives a GPT-2.
type gpt2Model struct{ *gpt2.Model }

func (m gpt2Model) backend() tensor.Backend { return m.Backend }
func (m gpt2Model) maxSeqLen() int          { return m.Config.MaxSeqLen }
func (m gpt2Model) vocabSize() int          { return m.Config.VocabSize }
func (m gpt2Model) enableGrads() error      { return m.EnableGrads() }
func (m gpt2Model) zeroGrad()               { m.ZeroGrad() }

func (m gpt2Model) trainable() (params, grads *tensor.Flat) { return m.Params, m.Grads }

func (m gpt2Model) trainableSpecs() []tensorSpec {
	var out []tensorSpec
	for _, s := range m.Config.ParamSpecs() {
		vector := strings.HasPrefix(s.Name, "ln") || strings.HasSuffix(s.Name, "b") // ln1w, qkvb, ...
		out = append(out, tensorSpec{s.Name, s.Numel(), vector})
	}
	return out
}

func (m gpt2Model) onGradsFinal(f func([][2]int))    { m.OnGradsFinal(f) }
func (m gpt2Model) stateParams() ([]float32, error)  { return m.ParamsToHost() }
func (m gpt2Model) setStateParams(v []float32) error { return m.SetParams(v) }
func (m gpt2Model) describeIn(st *checkpoint.State)  { st.Config = m.Config }

func (m gpt2Model) matches(st *checkpoint.State) error {
	if st.Llama != nil || st.Config != m.Config {
		return fmt.Errorf("checkpoint model %s does not match %v", describeState(st), m.Config)
	}
	return nil
}

// llamaModel drives a Llama-family model: every weight, or its LoRA adapters when it has them.
type llamaModel struct{ *llama.Model }

func (m llamaModel) backend() tensor.Backend { return m.Backend }
func (m llamaModel) vocabSize() int          { return m.Config.Vocab }
func (m llamaModel) zeroGrad()               { m.ZeroTrainableGrads() }

func (m llamaModel) trainable() (params, grads *tensor.Flat) { return m.Trainable() }

func (m llamaModel) maxSeqLen() int {
	if m.Config.MaxPositions > 0 {
		return m.Config.MaxPositions
	}
	return 1 << 30
}

func (m llamaModel) enableGrads() error {
	if _, ok := m.LoRA(); ok {
		return nil // the adapters have their gradients
	}
	return m.EnableGrads()
}

func (m llamaModel) trainableSpecs() []tensorSpec {
	specs := m.Config.ParamSpecs()
	if _, ok := m.LoRA(); ok {
		specs = m.LoRASpecs()
	}
	var out []tensorSpec
	for _, s := range specs {
		vector := strings.HasSuffix(s.Name, "norm.weight") || strings.HasSuffix(s.Name, ".bias")
		out = append(out, tensorSpec{s.Name, s.Numel(), vector})
	}
	return out
}

func (m llamaModel) onGradsFinal(func([][2]int)) {} // every range is reduced after Backward

func (m llamaModel) stateParams() ([]float32, error) { return m.StateParams() }

func (m llamaModel) setStateParams(v []float32) error { return m.SetStateParams(v) }

func (m llamaModel) describeIn(st *checkpoint.State) {
	c := m.Config
	st.Llama = &c
	if lc, ok := m.LoRA(); ok {
		st.LoRA = &lc
	}
}

func (m llamaModel) matches(st *checkpoint.State) error {
	lc, ok := m.LoRA()
	switch {
	case st.Llama == nil:
		return fmt.Errorf("checkpoint model %s is not a %s", describeState(st), m.Config.Architecture)
	case fmt.Sprint(*st.Llama) != fmt.Sprint(m.Config):
		return fmt.Errorf("checkpoint model %+v does not match %+v", *st.Llama, m.Config)
	case ok != (st.LoRA != nil) || ok && fmt.Sprint(*st.LoRA) != fmt.Sprint(lc):
		return fmt.Errorf("checkpoint LoRA adapters %+v do not match the model's %+v", st.LoRA, lc)
	}
	return nil
}

// describeState names the model a checkpoint holds.
func describeState(st *checkpoint.State) string {
	if st.Llama != nil {
		return st.Llama.Architecture
	}
	return st.Config.String()
}
