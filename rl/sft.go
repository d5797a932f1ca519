package rl

import (
	"fmt"
	"math"
	"time"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/train"
)

// SFTConfig configures supervised training on prompt/answer pairs (the warm-up before RL).
// Each field becomes a command-line flag.
type SFTConfig struct {
	Steps int `json:"steps"`
	// Batch is the number of examples per step; >= 1.
	Batch int `json:"batch"`
	// Settings are the learning rate, its schedule, weight decay and clipping.
	optim.Settings
	// AnswerOnly puts the loss on the answer tokens and the EOS only; otherwise the prompt's
	// tokens (after the first) are predicted too.
	AnswerOnly bool `json:"answer_only"`
	// EOS is appended to every answer so the model learns to stop.
	EOS int `json:"eos"`
	// LastTurnOnly trains a conversation (Prompt.Conversation) on its final assistant turn
	// alone, the turns before it the prompt; otherwise every assistant turn is trained, tool
	// calls included, in the conversation rendered once (see ConversationTokens).
	LastTurnOnly bool `json:"last_turn_only"`
	// MicroBatch caps the examples of one forward pass (gradient accumulation over the batch,
	// for memory, and what SetComm spreads over ranks); 0 runs the whole batch at once. The
	// micro-batches' gradients are added on the host in order, the same for any rank count.
	MicroBatch int `json:"micro_batch,omitempty"`
}

// DefaultSFTConfig is a setting for small models on the built-in tasks.
func DefaultSFTConfig() SFTConfig {
	return SFTConfig{Steps: 1000, Batch: 32, Settings: optim.Settings{LR: 3e-3, MinLR: 3e-4, Warmup: 50, MaxGradNorm: 1}, AnswerOnly: true, EOS: 50256}
}

// Validate names the first bad field.
func (c SFTConfig) Validate() error {
	if c.Steps < 1 {
		return fmt.Errorf("steps %d: want >= 1", c.Steps)
	}
	if c.Batch < 1 {
		return fmt.Errorf("batch %d: want >= 1", c.Batch)
	}
	if err := c.Settings.Validate(c.Steps); err != nil {
		return err
	}
	if c.EOS < 0 {
		return fmt.Errorf("eos %d: want >= 0", c.EOS)
	}
	if c.MicroBatch < 0 {
		return fmt.Errorf("micro_batch %d: want >= 0 (0: the whole batch)", c.MicroBatch)
	}
	return nil
}

func (c SFTConfig) schedule() optim.Cosine { return c.Schedule(c.Steps) }

// SFTTrainer trains a model on prompt ++ answer ++ EOS sequences. The prompt and the answer are
// encoded separately, exactly as the RL rollout sees them (the prompt encoded alone, then the
// completion token by token). A conversation is trained on every assistant turn instead,
// unless Config.LastTurnOnly.
type SFTTrainer struct {
	Config SFTConfig
	Model  nn.LM
	Opt    *optim.AdamW
	Step   int
	// Chat renders conversations in the model's chat template; nil lays them out as
	// episodes write them for a model without one (PlainConversationTokens).
	Chat ChatRender

	tok   Tokenizer
	src   *countedSource
	tape  *autograd.Tape
	head  nn.SelectedHead
	sched optim.Cosine
	comm  *mpi.Comm // nil: one process
	acc   *sftAccum // micro-batched or distributed steps

	scaler *train.LossScaler // fp16's dynamic loss scale (SetLossScaler); nil: none
}

// SetLossScaler scales the loss dynamically (fp16 products, see train.LossScaler): a step
// whose gradient overflows is skipped (SFTStats.Skipped) and the scale halved; nil turns it
// off. Its scale must be a power of two; a checkpoint keeps its state.
func (t *SFTTrainer) SetLossScaler(s *train.LossScaler) { t.scaler = s }

// NewSFTTrainer enables m's gradients and allocates the optimizer.
func NewSFTTrainer(m nn.LM, tok Tokenizer, src PromptSource, cfg SFTConfig) (*SFTTrainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil || tok == nil || src == nil {
		return nil, fmt.Errorf("sft: model, tokenizer and prompt source are required")
	}
	if err := validate(m); err != nil {
		return nil, err
	}
	if cfg.EOS >= m.VocabSize() {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, m.VocabSize())
	}
	if err := enableGrads(m); err != nil {
		return nil, err
	}
	opt, err := optim.NewAdamW(m.Params(), cfg.AdamW())
	if err != nil {
		return nil, err
	}
	return &SFTTrainer{Config: cfg, Model: m, Opt: opt, tok: tok, src: &countedSource{src: src}, tape: autograd.NewTape(), head: m.NewSelectedHead(), sched: cfg.schedule()}, nil
}

// TrainStep takes one optimizer step on Batch fresh examples.
func (t *SFTTrainer) TrainStep() (SFTStats, error) {
	start := time.Now()
	seqs, starts, masks, T, err := t.nextSequences()
	if err != nil {
		return SFTStats{}, err
	}
	B := t.Config.Batch
	inputs, positions, targets := packSequences(seqs, starts, masks, T, int32(t.Config.EOS))
	count := len(positions)
	loss, comms, err := t.lossAndGrads(inputs, positions, targets, B, T, count)
	if err != nil {
		return SFTStats{}, err
	}
	loss /= float64(count)
	lr := t.sched.At(t.Step)
	scale := lossScaleOf(t.scaler)
	gn, overflow, err := t.applyAdamW(loss, lr)
	if err != nil {
		return SFTStats{}, err
	}
	st := SFTStats{Step: t.Step, Loss: float32(loss), LR: lr, GradNorm: gn, Tokens: count, Seconds: since(start),
		CommBytes: comms.BytesSent, CommSeconds: comms.Seconds}
	if t.scaler != nil {
		st.LossScale = scale
	}
	if overflow != "" {
		st.Step, st.Skipped, st.Reason = t.Step+1, true, overflow
	}
	return st, nil
}

// nextSequences encodes the next Batch examples as prompt, answer and EOS (or as a whole
// conversation), and returns them, the first target index of each in the loss (past the
// prompt with AnswerOnly), the loss mask of each conversation (nil for the others) and the
// longest input length.
func (t *SFTTrainer) nextSequences() (seqs [][]int32, starts []int, masks [][]bool, T int, err error) {
	cfg := t.Config
	seqs = make([][]int32, cfg.Batch)
	starts = make([]int, cfg.Batch)
	masks = make([][]bool, cfg.Batch)
	for i := range seqs {
		p, err := t.src.Next()
		if err != nil {
			return nil, nil, nil, 0, fmt.Errorf("prompts: %w", err)
		}
		var seq []int32
		if len(p.Conversation) > 0 && !cfg.LastTurnOnly {
			if seq, masks[i], err = t.conversation(p); err != nil {
				return nil, nil, nil, 0, err
			}
		} else {
			pr, ans := t.tok.Encode(p.Text), t.tok.Encode(p.Answer)
			if len(pr) == 0 {
				return nil, nil, nil, 0, fmt.Errorf("example %q: the prompt encodes to no tokens", p.Text)
			}
			seq = append(append(append([]int32(nil), pr...), ans...), int32(cfg.EOS))
			if cfg.AnswerOnly {
				starts[i] = len(pr) - 1
			}
		}
		if len(seq)-1 > t.Model.MaxSeqLen() {
			return nil, nil, nil, 0, fmt.Errorf("example %q: %d tokens exceed the model's context of %d", p.Text, len(seq), t.Model.MaxSeqLen())
		}
		seqs[i] = seq
		T = max(T, len(seq)-1)
	}
	return seqs, starts, masks, T, nil
}

// conversation lays out p's conversation with its loss mask on every assistant turn (nil, the
// whole sequence trained, without AnswerOnly).
func (t *SFTTrainer) conversation(p Prompt) ([]int32, []bool, error) {
	seq, mask, err := t.layConversation(p)
	if err != nil {
		return nil, nil, fmt.Errorf("example %q: %w", p.Text, err)
	}
	if len(seq) < 2 {
		return nil, nil, fmt.Errorf("example %q: the conversation encodes to %d tokens", p.Text, len(seq))
	}
	if !t.Config.AnswerOnly {
		mask = nil
	}
	return seq, mask, nil
}

// layConversation is p's conversation in tokens, with its mask on the assistant turns: in
// the chat template, or as episodes write it for a model without one.
func (t *SFTTrainer) layConversation(p Prompt) ([]int32, []bool, error) {
	if t.Chat == nil {
		return PlainConversationTokens(t.tok, p.Conversation, int32(t.Config.EOS))
	}
	return ConversationTokens(t.Chat, t.tok, p.Conversation, p.Tools)
}

// packSequences lays the sequences out as B×T inputs padded with eos and returns the flat
// positions that enter the loss with their targets (the next token): from starts[i] on, or
// where masks[i] (when not nil) marks the target.
func packSequences(seqs [][]int32, starts []int, masks [][]bool, T int, eos int32) (inputs []int32, positions []int, targets []int32) {
	inputs = make([]int32, len(seqs)*T)
	for i, seq := range seqs {
		for t := 0; t < T; t++ {
			k := i*T + t
			inputs[k] = eos
			if t+1 < len(seq) {
				inputs[k] = seq[t]
				if masks[i] == nil && t >= starts[i] || masks[i] != nil && masks[i][t+1] {
					positions = append(positions, k)
					targets = append(targets, seq[t+1])
				}
			}
		}
	}
	return inputs, positions, targets
}

// lossAndGrads accumulates the gradient of the mean loss over count targets, in order over
// micro-batches or ranks when there are several, and returns the summed loss.
func (t *SFTTrainer) lossAndGrads(inputs []int32, positions []int, targets []int32, B, T, count int) (float64, mpi.ReduceStats, error) {
	if K, _ := t.microBatches(); K > 1 || t.comm != nil {
		return t.accumulateOrdered(inputs, positions, targets, B, T, count)
	}
	t.Model.ZeroGrad()
	sum, err := t.accumulate(inputs, positions, targets, 0, B, B, T, count)
	return sum, mpi.ReduceStats{}, err
}

// applyAdamW applies AdamW at lr unless the loss or the gradient norm is not finite (measured
// before the update, so such values never reach the weights), and returns the norm. Under
// loss scaling the gradients are unscaled first, and a finite loss whose gradient overflowed
// skips the step (overflow says why) instead of failing.
func (t *SFTTrainer) applyAdamW(loss float64, lr float32) (gn float32, overflow string, err error) {
	m := t.Model
	train.Unscale(m.Grads(), lossScaleOf(t.scaler))
	t.Opt.MeasureGrads(m.Grads())
	if gn, err = t.Opt.GradNorm(); err != nil {
		return 0, "", err
	}
	lossBad := math.IsNaN(loss) || math.IsInf(loss, 0)
	if !lossBad && !finite32(gn) {
		if overflow = lossScaleOverflow(t.scaler, gn); overflow != "" {
			return gn, overflow, nil
		}
	}
	if bad := lossBad || !finite32(gn); bad {
		return 0, "", fmt.Errorf("step %d: loss %v, gradient norm %v; the model was not updated (lower the learning rate, now %g, or check the model for NaN or Inf)", t.Step+1, loss, gn, lr)
	}
	if t.scaler != nil {
		t.scaler.Update(true)
	}
	t.Opt.UpdateMeasured(m.Params(), m.Grads(), lr)
	t.Step++
	return gn, "", nil
}

// accumulate runs rows r0..r0+rows-1 of the batch forward and backward, adding their share of
// the mean loss's gradient (each target weighs -1/count) to the parameter gradients; it returns
// the rows' summed negative log-likelihood. A last chunk shorter than rows is padded with EOS
// rows that carry no target, so every chunk has the same shape and reuses the activations.
func (t *SFTTrainer) accumulate(inputs []int32, positions []int, targets []int32, r0, rows, B, T, count int) (float64, error) {
	m := t.Model
	in := inputs[r0*T : min(B, r0+rows)*T]
	if len(in) < rows*T {
		padded := make([]int32, rows*T)
		for i := range padded {
			padded[i] = int32(t.Config.EOS)
		}
		copy(padded, in)
		in = padded
	}
	var pos []int
	var tg []int32
	for k, p := range positions {
		if p >= r0*T && p < (r0+rows)*T {
			pos, tg = append(pos, p-r0*T), append(tg, targets[k])
		}
	}
	if len(pos) == 0 {
		return 0, nil
	}
	if err := m.ForwardTrunk(t.tape, in, rows, T); err != nil {
		t.tape.Reset()
		return 0, err
	}
	logp, _, err := t.head.Forward(t.tape, pos, tg, nil, 1)
	if err != nil {
		t.tape.Reset()
		return 0, err
	}
	host := make([]float32, len(pos))
	if err := m.Backend().Download(host, logp.Value); err != nil {
		t.tape.Reset()
		return 0, err
	}
	var sum float64
	grad := -1 / float32(count) * lossScaleOf(t.scaler)
	for k, v := range host {
		sum -= float64(v)
		host[k] = grad
	}
	m.ZeroTrunkGrads()
	if err := m.Backend().Upload(logp.Grad, host); err != nil {
		t.tape.Reset()
		return 0, err
	}
	t.tape.Backward()
	return sum, nil
}
