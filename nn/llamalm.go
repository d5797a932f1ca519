package nn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/jsondiff"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
)

// LlamaLM is a Llama-family model (Llama, Qwen2, Qwen3) as an LM: every weight trains, or only
// its LoRA adapters when it has them (llama.Model.EnableLoRA), and then its reference is the
// same base with the adapters off, sharing its memory.
type LlamaLM struct {
	Model *llama.Model
	// MaxLen caps MaxSeqLen below the model's max_position_embeddings (0: no cap), which
	// reaches 32k-128k positions that an RL rollout never needs.
	MaxLen int
}

// Llama wraps m as an LM.
func Llama(m *llama.Model) *LlamaLM { return &LlamaLM{Model: m} }

// unbounded is the MaxSeqLen of a model whose config gives no max_position_embeddings.
const unbounded = 1 << 30

func (l *LlamaLM) Backend() tensor.Backend { return l.Model.Backend }
func (l *LlamaLM) VocabSize() int          { return l.Model.TokenVocab() }
func (l *LlamaLM) Width() int              { return l.Model.Config.Hidden }
func (l *LlamaLM) NumParams() int          { return l.Params().Len() }
func (l *LlamaLM) ZeroGrad()               { l.Model.ZeroTrainableGrads() }

func (l *LlamaLM) MaxSeqLen() int {
	n := l.Model.Config.MaxPositions
	if n <= 0 {
		n = unbounded
	}
	if l.MaxLen > 0 && l.MaxLen < n {
		n = l.MaxLen
	}
	return n
}

func (l *LlamaLM) lora() bool {
	_, ok := l.Model.LoRA()
	return ok
}

func (l *LlamaLM) Params() *tensor.Flat {
	params, _ := l.Model.Trainable()
	return params
}

func (l *LlamaLM) Grads() *tensor.Flat {
	_, grads := l.Model.Trainable()
	return grads
}

func (l *LlamaLM) TrainableSpecs() []TensorSpec {
	specs := l.Model.Config.ParamSpecs()
	if l.lora() {
		specs = l.Model.LoRASpecs()
	}
	var out []TensorSpec
	for _, s := range specs {
		vector := strings.HasSuffix(s.Name, "norm.weight") || strings.HasSuffix(s.Name, ".bias")
		out = append(out, TensorSpec{s.Name, s.Numel(), vector})
	}
	return out
}

// EnableGrads allocates the gradients of every weight; a LoRA model's adapters have theirs.
func (l *LlamaLM) EnableGrads() error {
	if l.lora() {
		return nil
	}
	return l.Model.EnableGrads()
}

func (l *LlamaLM) ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error) {
	return l.Model.ForwardLoss(tp, inputs, targets, B, T)
}

func (l *LlamaLM) ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error {
	return l.Model.ForwardCrossEntropy(tp, inputs, targets, B, T)
}

func (l *LlamaLM) Losses() *tensor.Tensor           { return l.Model.Losses() }
func (l *LlamaLM) Backward(tp *autograd.Tape) error { return l.Model.Backward(tp) }

// SetLossScale implements LossScaler.
func (l *LlamaLM) SetLossScale(s float32) { l.Model.LossScale = s }

// SetRecompute implements Recomputer.
func (l *LlamaLM) SetRecompute(on bool) { l.Model.Recompute = on }

// OnGradsFinal reports nothing: every range is final after Backward.
func (l *LlamaLM) OnGradsFinal(func(ranges [][2]int)) {}

func (l *LlamaLM) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return l.Model.ForwardTrunk(tp, inputs, B, T)
}

func (l *LlamaLM) ZeroTrunkGrads()                          { l.Model.ZeroTrunkGrads() }
func (l *LlamaLM) NewSelectedHead() SelectedHead            { return l.Model.NewSelectedHead() }
func (l *LlamaLM) NewDecoder(B, limit int) (Decoder, error) { return l.Model.NewDecoder(B, limit) }

// Reference is the base with the adapters off for a LoRA model, else a copy of the model. Either
// runs before the model's recorded forward, never between it and its backward, so the two take
// turns with one set of activations.
func (l *LlamaLM) Reference() (LM, bool, error) {
	if l.lora() {
		return &loraBase{l}, true, nil
	}
	m, err := llama.New(l.Model.Backend, l.Model.Config)
	if err != nil {
		return nil, false, err
	}
	if err := m.LimitVocab(l.Model.TokenVocab()); err != nil {
		return nil, false, err
	}
	if err := m.ShareActivations(l.Model); err != nil {
		return nil, false, err
	}
	ref := &LlamaLM{Model: m, MaxLen: l.MaxLen}
	return ref, false, copyParams(ref, l)
}

func (l *LlamaLM) StateParams() ([]float32, error)  { return l.Model.StateParams() }
func (l *LlamaLM) SetStateParams(v []float32) error { return l.Model.SetStateParams(v) }

func (l *LlamaLM) DescribeIn(st *checkpoint.State) {
	c := l.Model.Config
	st.Llama = &c
	if lc, ok := l.Model.LoRA(); ok {
		st.LoRA = &lc
	}
}

// Matches compares configs by their JSON, so equal RoPE scalings behind different pointers
// match.
func (l *LlamaLM) Matches(st *checkpoint.State) error {
	if st.Llama == nil {
		return fmt.Errorf("checkpoint holds a GPT-2, the model is a %s model", l.Model.Config.Architecture)
	}
	if d := jsondiff.First("model", *st.Llama, l.Model.Config, nil); d != "" {
		return errors.New(d)
	}
	lc, ok := l.Model.LoRA()
	switch {
	case ok != (st.LoRA != nil):
		return fmt.Errorf("checkpoint has LoRA adapters: %v, the model: %v", st.LoRA != nil, ok)
	case ok:
		if d := jsondiff.First("lora", *st.LoRA, lc, nil); d != "" {
			return errors.New(d)
		}
	}
	return nil
}

// errFrozen is what a LoRA model's reference answers to what it cannot do.
var errFrozen = errors.New("the reference model does not train")

// loraBase is a LoRA model's reference: the same model with its adapters off, sharing the base
// weights and activations (a reference forward runs before the model's recorded one). It has
// no parameters of its own: it neither trains nor samples, and a checkpoint holds nothing of it.
type loraBase struct{ l *LlamaLM }

func (b *loraBase) Backend() tensor.Backend         { return b.l.Backend() }
func (b *loraBase) VocabSize() int                  { return b.l.VocabSize() }
func (b *loraBase) MaxSeqLen() int                  { return b.l.MaxSeqLen() }
func (b *loraBase) Width() int                      { return b.l.Width() }
func (b *loraBase) NumParams() int                  { return 0 }
func (b *loraBase) Params() *tensor.Flat            { return nil }
func (b *loraBase) Grads() *tensor.Flat             { return nil }
func (b *loraBase) TrainableSpecs() []TensorSpec    { return nil }
func (b *loraBase) EnableGrads() error              { return nil }
func (b *loraBase) ZeroGrad()                       {}
func (b *loraBase) ZeroTrunkGrads()                 {}
func (b *loraBase) OnGradsFinal(func([][2]int))     {}
func (b *loraBase) Losses() *tensor.Tensor          { return b.l.Losses() }
func (b *loraBase) Backward(*autograd.Tape) error   { return errFrozen }
func (b *loraBase) Reference() (LM, bool, error)    { return b, true, nil }
func (b *loraBase) StateParams() ([]float32, error) { return nil, nil }
func (b *loraBase) SetStateParams([]float32) error  { return nil }
func (b *loraBase) DescribeIn(*checkpoint.State)    {}
func (b *loraBase) Matches(*checkpoint.State) error { return nil }
func (b *loraBase) NewSelectedHead() SelectedHead   { return b.l.NewSelectedHead() }
func (b *loraBase) NewDecoder(int, int) (Decoder, error) {
	return nil, errors.New("the reference model does not sample")
}

// baseForward runs f with the adapters off; a recorded forward is refused.
func (b *loraBase) baseForward(tp *autograd.Tape, f func() error) error {
	if tp.Recording() {
		return errFrozen
	}
	b.l.Model.SetAdapters(false)
	defer b.l.Model.SetAdapters(true)
	return f()
}

func (b *loraBase) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return b.baseForward(tp, func() error { return b.l.Model.ForwardTrunk(nil, inputs, B, T) })
}

func (b *loraBase) ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error {
	return b.baseForward(tp, func() error { return b.l.Model.ForwardCrossEntropy(nil, inputs, targets, B, T) })
}

func (b *loraBase) ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (loss float32, err error) {
	err = b.baseForward(tp, func() error {
		loss, err = b.l.Model.ForwardLoss(nil, inputs, targets, B, T)
		return err
	})
	return loss, err
}

// ReleaseActivations frees the model's activations until its next forward pass.
func (l *LlamaLM) ReleaseActivations() { l.Model.ReleaseActivations() }

// ReserveActivations lays out the activations, with their gradients, of forward passes of up
// to B sequences of T tokens.
func (l *LlamaLM) ReserveActivations(B, T int) error { return l.Model.ReserveActivations(B, T, true) }
