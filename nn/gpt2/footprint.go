package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Footprint is what a model takes in memory on a backend, in bytes: computed from the same
// layout the model allocates, so it cannot drift from it.
type Footprint struct {
	B, T      int
	Training  bool
	Recompute bool  // the activations are laid out for Model.Recompute
	Params    int64 // weights
	Grads     int64 // their gradients (training)
	Optimizer int64 // AdamW's two moments (training)
	// Activations are one batch's activations (and their gradients when training), the lm
	// head's included: the whole (B*T, Vp) logits, or a few chunks of rows of them when that
	// is smaller (ForwardCrossEntropy's chunked head).
	Activations int64
}

// Total is the sum of the parts.
func (f Footprint) Total() int64 { return f.Params + f.Grads + f.Optimizer + f.Activations }

// FootprintOptions say how a model runs, beyond its shape and batch, for EstimateFootprintWith.
type FootprintOptions struct {
	Training  bool // with gradients and AdamW, else a forward pass
	Recompute bool // Model.Recompute
}

// EstimateFootprint is the memory cfg takes on b for batches of B sequences of T tokens, for
// training (with gradients and AdamW) or inference.
func EstimateFootprint(b tensor.Backend, cfg Config, B, T int, training bool) (Footprint, error) {
	return EstimateFootprintWith(b, cfg, B, T, FootprintOptions{Training: training})
}

// EstimateFootprintWith is EstimateFootprint with the options o.
func EstimateFootprintWith(b tensor.Backend, cfg Config, B, T int, o FootprintOptions) (Footprint, error) {
	training := o.Training
	if err := cfg.Validate(); err != nil {
		return Footprint{}, err
	}
	if B <= 0 || T <= 0 || T > cfg.MaxSeqLen {
		return Footprint{}, fmt.Errorf("gpt2: footprint of B=%d T=%d: want B >= 1 and 1 <= T <= %d", B, T, cfg.MaxSeqLen)
	}
	f := Footprint{B: B, T: T, Training: training, Recompute: o.Recompute, Params: 4 * int64(cfg.NumParams())}
	if training {
		f.Grads, f.Optimizer = f.Params, 2*f.Params
	}
	acts := &activations{B: B, T: T, withGrad: training, recompute: o.Recompute}
	acts.attSaved[0], acts.attSaved[1] = b.AttentionSaved(B, T, cfg.NumHeads)
	l := &actLayout{cap: tensor.MaxAllocElems(b)}
	acts.layout(cfg, l)
	chunked := cfg.chunkedLoss(B*T, 0)
	if !chunked {
		acts.layoutHead(cfg, l)
	}
	if l.err != nil {
		return Footprint{}, l.err
	}
	f.Activations = l.bytes() + tokenBytes(B, T)
	if chunked {
		f.Activations += cfg.lossHeadBytes(B*T, 0, training)
	}
	return f, nil
}

// String is a one-line summary.
func (f Footprint) String() string {
	mode := "inference"
	if f.Training {
		mode = "training"
	}
	recompute := ""
	if f.Recompute {
		recompute = " (recompute)"
	}
	return fmt.Sprintf("%s at B=%d T=%d: parameters %s, gradients %s, AdamW %s, activations %s%s; total %s",
		mode, f.B, f.T, tensor.HumanBytes(f.Params), tensor.HumanBytes(f.Grads), tensor.HumanBytes(f.Optimizer), tensor.HumanBytes(f.Activations), recompute, tensor.HumanBytes(f.Total()))
}

// LargestBatch is the largest B up to maxB whose footprint fits budget bytes, or 0 when none.
func LargestBatch(b tensor.Backend, cfg Config, T, maxB int, training bool, budget int64) int {
	return LargestBatchWith(b, cfg, T, maxB, FootprintOptions{Training: training}, budget)
}

// LargestBatchWith is LargestBatch with the options o.
func LargestBatchWith(b tensor.Backend, cfg Config, T, maxB int, o FootprintOptions, budget int64) int {
	lo, hi := 0, maxB
	for lo < hi {
		mid := (lo + hi + 1) / 2
		f, err := EstimateFootprintWith(b, cfg, mid, T, o)
		if err == nil && f.Total() <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// DecoderBytes is the memory NewDecoder(B, limit) allocates: the key/value cache of every
// layer and one step's activations, on the device, and the logits it returns on the host.
func (c Config) DecoderBytes(B, limit int) int64 {
	N, C := int64(B*limit), int64(c.Channels)
	floats := 2*int64(c.NumLayers)*N*C + N + 3*N*C + 3*N*C + 4*N*C + 2*N + 2*int64(B)*C + int64(B*c.PaddedVocabSize)
	return 4*floats + 4*int64(B*c.PaddedVocabSize)
}

// TrunkActivationBytes is what ForwardTrunk lays out for B sequences of T tokens (with room for
// the gradients when withGrad): the activations without the full lm head's, which a
// SelectedHead never needs.
func TrunkActivationBytes(b tensor.Backend, cfg Config, B, T int, withGrad bool) (int64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if B <= 0 || T <= 0 || T > cfg.MaxSeqLen {
		return 0, fmt.Errorf("gpt2: activations of B=%d T=%d: want B >= 1 and 1 <= T <= %d", B, T, cfg.MaxSeqLen)
	}
	acts := &activations{B: B, T: T, withGrad: withGrad}
	acts.attSaved[0], acts.attSaved[1] = b.AttentionSaved(B, T, cfg.NumHeads)
	l := &actLayout{cap: tensor.MaxAllocElems(b)}
	acts.layout(cfg, l)
	if l.err != nil {
		return 0, l.err
	}
	return l.bytes() + tokenBytes(B, T), nil
}

// SelectedHeadBytes is what a SelectedHead holds for n positions (with gradients when
// withGrad): per position its hidden state, log-prob, entropy, target and cutoff, and one
// chunk of logits (and their gradient) however large n is.
func (m *Model) SelectedHeadBytes(n int, withGrad bool) int64 {
	g := int64(1)
	if withGrad {
		g = 2
	}
	perRow := g*int64(m.Config.Channels+2) + 2
	return 4 * (int64(n)*perRow + g*int64(m.headChunkRows(n)*m.Config.PaddedVocabSize))
}
