package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/tensor"
)

// Footprint is the memory an RL trainer takes on its policy's backend, in bytes, counted from
// the layouts the models allocate.
type Footprint struct {
	Rows, PassRows, T int // rows sampled a step, rows of one forward pass, positions of a row
	Params            int64
	Grads             int64
	Optimizer         int64 // AdamW's two moments
	Reference         int64 // the reference model's weights (and activations when it has its own)
	// Activations are one forward pass's trunk activations with their gradients, which the
	// old log-probs, reference and update passes take turns with.
	Activations int64
	// Head is the lm head at the completion positions, policy and reference: a chunk of
	// logits however many positions there are.
	Head    int64
	Decoder int64 // the rollout's key/value cache, one step's activations and bfloat16 weight copies (bf16 on the CPU)
	// Phased is set when the activations and the head are freed before the rollout, so they
	// and the decoder take turns with one region of memory.
	Phased bool
}

// Total is the sum of the parts, counting only the larger of the passes' buffers and the
// decoder when they take turns (Phased).
func (f Footprint) Total() int64 {
	state := f.Params + f.Grads + f.Optimizer + f.Reference
	if f.Phased {
		return state + max(f.Activations+f.Head, f.Decoder)
	}
	return state + f.Activations + f.Head + f.Decoder
}

// String is a one-line summary.
func (f Footprint) String() string {
	h := tensor.HumanBytes
	return fmt.Sprintf("%d rows of T=%d, %d a pass: parameters %s, gradients %s, AdamW %s, reference %s, activations %s, lm head %s, rollout decoder %s; total %s",
		f.Rows, f.T, f.PassRows, h(f.Params), h(f.Grads), h(f.Optimizer), h(f.Reference), h(f.Activations), h(f.Head), h(f.Decoder), h(f.Total()))
}

// EstimateFootprint is what a trainer of p with cfg takes when each step samples rows
// completions of prompts of up to promptLen tokens, with a reference model when reference is
// set (GRPOTrainerConfig.UsesReference, PPOTrainerConfig.UsesReference).
func EstimateFootprint(p nn.LM, cfg TrainConfig, rows, promptLen int, reference bool) (Footprint, error) {
	newTok := cfg.Rollout.MaxNewTokens
	if rows <= 0 || promptLen <= 0 || newTok <= 0 {
		return Footprint{}, fmt.Errorf("footprint of %d rows, prompts of %d tokens and %d new: want each >= 1", rows, promptLen, newTok)
	}
	limit := promptLen + newTok
	if limit > p.MaxSeqLen() {
		return Footprint{}, fmt.Errorf("prompts of %d tokens and %d new exceed the model's context of %d", promptLen, newTok, p.MaxSeqLen())
	}
	if cfg.MicroBatch == MicroBatchAuto {
		n, err := AutoMicroBatch(p, cfg, rows, promptLen, reference)
		if err != nil {
			return Footprint{}, err
		}
		cfg.MicroBatch = n
	}
	f := Footprint{Rows: rows, PassRows: rows, T: limit - 1}
	if cfg.MicroBatch > 0 {
		f.PassRows = min(rows, cfg.MicroBatch)
	}
	var err error
	switch m := unwrap(p).(type) {
	case *nn.GPT2LM:
		err = gpt2Footprint(m.Model, &f, newTok, limit, reference)
	case *nn.LlamaLM:
		err = llamaFootprint(m.Model, &f, newTok, limit, reference)
	default:
		err = fmt.Errorf("rl: no memory estimate for a %T", p)
	}
	if err != nil {
		return Footprint{}, err
	}
	return f, nil
}

// wrapper is a policy that adds behaviour to another (a benchmark's decoder, say) and takes
// its memory: its footprint and its releases are those of the policy it wraps.
type wrapper interface{ Unwrap() nn.LM }

// unwrap is the innermost policy p wraps, p itself when it wraps none.
func unwrap(p nn.LM) nn.LM {
	for {
		w, ok := p.(wrapper)
		if !ok {
			return p
		}
		p = w.Unwrap()
	}
}

func gpt2Footprint(m *gpt2.Model, f *Footprint, newTok, limit int, reference bool) error {
	acts, err := gpt2.TrunkActivationBytes(m.Backend, m.Config, f.PassRows, f.T, true)
	if err != nil {
		return err
	}
	f.Params = 4 * int64(m.Config.NumParams())
	f.Grads, f.Optimizer = f.Params, 2*f.Params
	f.Activations = acts
	n := f.PassRows * newTok
	f.Head = m.SelectedHeadBytes(n, true)
	if reference { // its weights and head; the activations are the policy's
		f.Reference, f.Head = f.Params, f.Head+m.SelectedHeadBytes(n, false)
	}
	f.Decoder = m.Config.DecoderBytes(f.Rows, limit) + m.DecoderCopyBytes()
	f.Phased = true // the trainer releases them before each rollout (gpt2.Model.ReleaseActivations)
	return nil
}

func llamaFootprint(m *llama.Model, f *Footprint, newTok, limit int, reference bool) error {
	var lo *llama.LoRAConfig
	rank := 0
	if c, ok := m.LoRA(); ok {
		lo, rank = &c, c.Rank
	}
	fp, err := llama.EstimateFootprint(m.Backend, m.Config, f.PassRows, f.T, true, lo)
	if err != nil {
		return err
	}
	acts, err := llama.TrunkActivationBytes(m.Backend, m.Config, f.PassRows, f.T, true, lo)
	if err != nil {
		return err
	}
	f.Params, f.Grads, f.Optimizer, f.Activations = fp.Params, fp.Grads, fp.Optimizer, acts
	n := f.PassRows * newTok
	f.Head = m.SelectedHeadBytes(n, true)
	if reference { // its head; the activations are the policy's, and so is a LoRA base
		f.Head += m.SelectedHeadBytes(n, false)
		if lo == nil {
			f.Reference = 4 * int64(m.Config.NumParams())
		}
	}
	f.Decoder = m.Config.DecoderBytes(f.Rows, limit, rank) + m.DecoderCopyBytes()
	f.Phased = true // the trainer releases them before each rollout (llama.Model.ReleaseActivations)
	return nil
}

// minPassBudget is the least memory AutoMicroBatch gives one forward pass: a small model's
// whole batch runs at once.
const minPassBudget = 64 << 20

// AutoMicroBatch is the most rows of one forward pass (TrainConfig.MicroBatch) whose
// activations and lm head take at most an eighth of the training state (parameters, gradients
// and AdamW), or minPassBudget when that is more. The passes then cost a fraction of what the
// model always holds, whatever the batch: a whole batch at once is several times the state
// (GPT-2 124M: 64 rows of 63 positions lay out 3 GB of activations). It returns rows when
// the whole batch fits.
func AutoMicroBatch(p nn.LM, cfg TrainConfig, rows, promptLen int, reference bool) (int, error) {
	cfg.MicroBatch = 0
	whole, err := EstimateFootprint(p, cfg, rows, promptLen, reference)
	if err != nil {
		return 0, err
	}
	budget := max(int64(minPassBudget), (whole.Params+whole.Grads+whole.Optimizer)/8)
	pass := func(n int) (int64, error) {
		cfg.MicroBatch = n
		f, err := EstimateFootprint(p, cfg, rows, promptLen, reference)
		return f.Activations + f.Head, err
	}
	lo, hi := 1, rows // the largest n in [1, rows] within the budget, 1 when none is
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b, err := pass(mid)
		if err != nil {
			return 0, err
		}
		if b <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}
