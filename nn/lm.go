// Package nn holds [LM], the one interface through which the trainers drive either model family.
//
// LM is the view of a causal language model that language-model training (nn/train) and RL
// fine-tuning (rl) drive; [GPT2] (nn/gpt2) and [Llama] (nn/llama: Llama, Qwen2, Qwen3, with or
// without LoRA adapters) implement it.
//
// LM is tokenizer-independent: it sees token ids, one flat buffer of trained parameters and
// their gradients, a training loss, the final hidden states and a head of log-probs at chosen
// positions, a sampling decoder, and the values a checkpoint holds. What only one caller needs
// about one family (an RL memory estimate, a LoRA rule) stays with that caller.
//
// # Two families written side by side
//
// nn/gpt2 and nn/llama take the same steps under the same names (forward.go, decode.go,
// selected.go, recompute.go), so that reading one teaches the other. What does not depend on
// the model is written once in nn/internal: kvrows (a decoder's rows and the entry points that
// feed it), halfweights (bfloat16 weight copies), tokenloss and tokenids. The short passages
// that remain alike (handing activations to a reference model, freeing a head's buffers) touch
// each family's own state and stay with it.
package nn

import (
	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/tensor"
)

// LM is a causal language model as the trainers drive it: a GPT-2 ([GPT2]) or a Llama-family
// model ([Llama]).
type LM interface {
	Backend() tensor.Backend
	// VocabSize is the number of token ids the model's distribution covers (after a
	// LimitVocab of the model).
	VocabSize() int
	// MaxSeqLen is the longest sequence the model runs.
	MaxSeqLen() int
	// Width is the hidden state's width, the input of a value head.
	Width() int

	// NumParams is the number of trained parameters, the length of Params and Grads.
	NumParams() int
	// Params and Grads are the flat buffers of what trains (every weight, or the adapters of
	// a LoRA model) and their gradients (nil until EnableGrads).
	Params() *tensor.Flat
	Grads() *tensor.Flat
	// TrainableSpecs names the tensors of Params in buffer order.
	TrainableSpecs() []TensorSpec
	// EnableGrads allocates the gradients of what trains.
	EnableGrads() error
	// ZeroGrad clears the gradients of what trains.
	ZeroGrad()

	// ForwardLoss runs the model on B rows of T tokens and returns the mean cross-entropy
	// against targets.
	ForwardLoss(tp *autograd.Tape, inputs, targets []int32, B, T int) (float32, error)
	// ForwardCrossEntropy is ForwardLoss leaving the per-token losses on the device (Losses).
	ForwardCrossEntropy(tp *autograd.Tape, inputs, targets []int32, B, T int) error
	// Losses are the per-token losses (B*T) of the last ForwardCrossEntropy, on the device.
	Losses() *tensor.Tensor
	// Backward back-propagates the mean of the losses recorded on tp into the gradients,
	// which accumulate.
	Backward(tp *autograd.Tape) error
	// OnGradsFinal has Backward report ranges (offset, length) of Grads as they become final,
	// so their reduction across ranks can start during the pass (nil stops it). A model may
	// report none: every range is final when Backward returns.
	OnGradsFinal(f func(ranges [][2]int))

	// ForwardTrunk runs the model up to its final hidden states on B rows of T tokens.
	ForwardTrunk(tp *autograd.Tape, inputs []int32, B, T int) error
	// ZeroTrunkGrads clears the gradients of the activations ForwardTrunk records.
	ZeroTrunkGrads()
	// NewSelectedHead returns a head over the hidden states of the last ForwardTrunk.
	NewSelectedHead() SelectedHead
	// NewDecoder returns a KV-cache decoder for B rows of up to limit positions.
	NewDecoder(B, limit int) (Decoder, error)
	// Reference returns a frozen model with the same parameters: a copy, or for a LoRA model
	// the shared base with its adapters off (shared set), which cannot train or sample.
	Reference() (ref LM, shared bool, err error)

	// StateParams are the values a checkpoint holds (for LoRA, every base weight and then the
	// adapters); SetStateParams restores them.
	StateParams() ([]float32, error)
	SetStateParams(values []float32) error
	// DescribeIn records the model's shape (and LoRA adapters) in a checkpoint state;
	// Matches names the first way a state's differs.
	DescribeIn(st *checkpoint.State)
	Matches(st *checkpoint.State) error
}

// LossScaler is a model whose Backward can propagate a multiple of the loss gradient (loss
// scaling, for products with binary16 operands): GPT2 and Llama are.
type LossScaler interface {
	// SetLossScale multiplies the gradient the next Backward seeds by s (1: none).
	SetLossScale(s float32)
}

// Recomputer is a model that can keep fewer activations and recompute the rest in the backward,
// with the same numbers: GPT2 and Llama are (gpt2.Model.Recompute, llama.Model.Recompute).
type Recomputer interface {
	// SetRecompute switches recomputing on or off from the next forward pass.
	SetRecompute(on bool)
}

// TensorSpec names one tensor of a flat parameter buffer; Vector marks a bias or a norm's
// weight (in llm.c's stacked layout a matrix of one vector a layer), which a decay limited to
// matrices leaves alone.
type TensorSpec struct {
	Name   string
	Numel  int
	Vector bool
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

// copyParams sets dst's trained parameters to src's.
func copyParams(dst, src LM) error {
	v, err := src.Params().ToHost()
	if err != nil {
		return err
	}
	return dst.Params().Upload(v)
}
