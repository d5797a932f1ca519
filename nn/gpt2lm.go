package nn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/jsondiff"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
)

// GPT2LM is a GPT-2 as an LM: every weight trains.
type GPT2LM struct{ Model *gpt2.Model }

// GPT2 wraps m as an LM.
func GPT2(m *gpt2.Model) *GPT2LM { return &GPT2LM{Model: m} }

func (g *GPT2LM) Backend() tensor.Backend { return g.Model.Backend }

// SetLossScale implements LossScaler.
func (g *GPT2LM) SetLossScale(s float32) { g.Model.LossScale = s }

// SetRecompute implements Recomputer.
func (g *GPT2LM) SetRecompute(on bool) { g.Model.Recompute = on }
func (g *GPT2LM) VocabSize() int       { return g.Model.TokenVocab() }
func (g *GPT2LM) MaxSeqLen() int       { return g.Model.Config.MaxSeqLen }
func (g *GPT2LM) Width() int           { return g.Model.Config.Channels }
func (g *GPT2LM) NumParams() int       { return g.Model.Config.NumParams() }
func (g *GPT2LM) Params() *tensor.Flat { return g.Model.Params }
func (g *GPT2LM) Grads() *tensor.Flat  { return g.Model.Grads }
func (g *GPT2LM) EnableGrads() error   { return g.Model.EnableGrads() }
func (g *GPT2LM) ZeroGrad()            { g.Model.ZeroGrad() }

// BackwardFromZero implements train's zeroed backward (gpt2.Model.BackwardFromZero).
func (g *GPT2LM) BackwardFromZero(tp *autograd.Tape) error { return g.Model.BackwardFromZero(tp) }

func (g *GPT2LM) TrainableSpecs() []TensorSpec {
	var out []TensorSpec
	for _, s := range g.Model.Config.ParamSpecs() {
		vector := strings.HasPrefix(s.Name, "ln") || strings.HasSuffix(s.Name, "b") // ln1w, qkvb, ...
		out = append(out, TensorSpec{s.Name, s.Numel(), vector})
	}
	return out
}

func (g *GPT2LM) ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error) {
	return g.Model.ForwardLoss(tp, inputs, targets, B, T)
}

func (g *GPT2LM) ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error {
	return g.Model.ForwardCrossEntropy(tp, inputs, targets, B, T)
}

func (g *GPT2LM) Losses() *tensor.Tensor               { return g.Model.Losses() }
func (g *GPT2LM) Backward(tp *autograd.Tape) error     { return g.Model.Backward(tp) }
func (g *GPT2LM) OnGradsFinal(f func(ranges [][2]int)) { g.Model.OnGradsFinal(f) }

func (g *GPT2LM) ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error {
	return g.Model.ForwardTrunk(tp, inputs, B, T)
}

func (g *GPT2LM) ZeroTrunkGrads()                          { g.Model.ZeroTrunkGrads() }
func (g *GPT2LM) NewSelectedHead() SelectedHead            { return g.Model.NewSelectedHead() }
func (g *GPT2LM) NewDecoder(B, limit int) (Decoder, error) { return g.Model.NewDecoder(B, limit) }

// Reference is a second GPT-2 with g's parameters and vocabulary limit. It runs before the
// model's recorded forward, never between it and its backward, so the two take turns with one
// set of activations.
func (g *GPT2LM) Reference() (LM, bool, error) {
	m, err := gpt2.New(g.Model.Backend, g.Model.Config)
	if err != nil {
		return nil, false, err
	}
	if err := m.LimitVocab(g.Model.TokenVocab()); err != nil {
		return nil, false, err
	}
	if err := m.ShareActivations(g.Model); err != nil {
		return nil, false, err
	}
	ref := GPT2(m)
	return ref, false, copyParams(ref, g)
}

func (g *GPT2LM) StateParams() ([]float32, error)  { return g.Model.ParamsToHost() }
func (g *GPT2LM) SetStateParams(v []float32) error { return g.Model.SetParams(v) }
func (g *GPT2LM) DescribeIn(st *checkpoint.State)  { st.Config = g.Model.Config }

func (g *GPT2LM) Matches(st *checkpoint.State) error {
	if st.Llama != nil {
		return fmt.Errorf("checkpoint holds a %s model, the model is a GPT-2", st.Llama.Architecture)
	}
	if st.Config == g.Model.Config {
		return nil
	}
	if d := jsondiff.First("model", st.Config, g.Model.Config, nil); d != "" {
		return errors.New(d)
	}
	return fmt.Errorf("checkpoint model %v does not match %v", st.Config, g.Model.Config)
}

// ReleaseActivations frees the model's activations until its next forward pass.
func (g *GPT2LM) ReleaseActivations() { g.Model.ReleaseActivations() }

// ReserveActivations lays out the activations, with their gradients, of forward passes of up
// to B sequences of T tokens.
func (g *GPT2LM) ReserveActivations(B, T int) error { return g.Model.ReserveActivations(B, T, true) }
