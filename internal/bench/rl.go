package bench

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// RLOptions are an RL benchmark's settings.
type RLOptions struct {
	Algo          string // grpo or ppo
	GroupSize     int    // completions per prompt (PPO's samples per prompt)
	Prompts       int    // prompts per step
	PromptLen     int    // tokens per prompt
	MaxNewTokens  int    // tokens per completion: EOS is never drawn, so every one has this length
	MicroBatch    int    // rows per forward pass of the log-probs and updates, as rl.TrainConfig's
	GenBatch      int    // rows decoded together (0: every row of the step)
	Steps, Warmup int    // timed steps (their mean is reported), and untimed ones before them
	// LossScaler is the trainer's, as a run's steps in its precision take; nil for none.
	LossScaler *train.LossScaler
}

// timedTrainer is what RL drives of either trainer.
type timedTrainer interface {
	TrainStep() (*rl.StepReport, error)
	SetPhaseTimer(rl.PhaseTimer)
	SetLossScaler(*train.LossScaler)
}

// RandomPolicy is s with random weights as a policy; a Llama-family one is limited to
// sequences of maxLen, which the rollouts need and no more.
func RandomPolicy(be tensor.Backend, s Shape, maxLen int) (nn.LM, error) {
	if s.IsLlama {
		m, err := newRandomLlama(be, s.Llama, s.LoRARank)
		if err != nil {
			return nil, err
		}
		return &nn.LlamaLM{Model: m, MaxLen: maxLen}, nil
	}
	m, err := newRandomGPT2(be, s.GPT2)
	if err != nil {
		return nil, err
	}
	return nn.GPT2(m), nil
}

// RL times o.Steps GRPO or PPO steps of policy on synthetic prompts and reports each phase's
// time, tokens/s and its fraction of the limit it is bound by. The prompt and the completions
// must fit the policy's context.
func RL(be tensor.Backend, policy nn.LM, o RLOptions) (map[string]any, error) {
	b := rlBench{RLOptions: o, cost: costOfPolicy(policy), trainedParams: policy.NumParams(), backwardProducts: 2}
	if lp, ok := policy.(*nn.LlamaLM); ok {
		if _, lora := lp.Model.LoRA(); lora {
			b.backwardProducts = 1
		}
	}
	eos := rlBenchEOS(policy)
	wrapped := &benchPolicy{LM: policy, eos: eos, cost: b.cost}
	tr, err := b.trainer(wrapped, eos)
	if err != nil {
		return nil, err
	}
	tr.SetLossScaler(o.LossScaler)
	for i := 0; i < o.Warmup; i++ {
		if _, err := tr.TrainStep(); err != nil {
			return nil, err
		}
	}
	peakBefore, _ := peak(be)
	bw := readBandwidth(be)
	clock := newPhaseClock()
	tr.SetPhaseTimer(clock)
	wrapped.track = &decodeTally{}
	settle()
	var stepSeconds float64
	for i := 0; i < o.Steps; i++ {
		rep, err := tr.TrainStep()
		if err != nil {
			return nil, err
		}
		stepSeconds += rep.Seconds
	}
	p, th := peak(be)
	p = max(p, peakBefore)
	return b.report(be, clock, wrapped.track, stepSeconds, p, th, bw), nil
}

// rlBench is an RL benchmark's settings and what it learns of the policy.
type rlBench struct {
	RLOptions
	cost          modelCost
	trainedParams int
	// backwardProducts is the backward pass's products per forward one: 2 (the inputs' and
	// the weights' gradients), 1 when only LoRA adapters train and the weights need none.
	backwardProducts float64
}

// trainer builds the GRPO or PPO trainer of a step of b's shape on synthetic prompts.
func (b *rlBench) trainer(p nn.LM, eos int) (timedTrainer, error) {
	tok := benchTokenizer{vocab: p.VocabSize(), eos: eos, promptLen: b.PromptLen}
	next := 0
	prompts := rl.PromptFunc(func() (rl.Prompt, error) {
		next++
		return rl.Prompt{Text: "prompt " + strconv.Itoa(next)}, nil
	})
	reward, err := rl.NewCombined(rl.Weighted{Reward: rl.RewardFunc{RewardName: "hash", Fn: hashReward}, Weight: 1})
	if err != nil {
		return nil, err
	}
	tc := rl.DefaultTrainConfig()
	tc.Steps, tc.PromptsPerStep, tc.MicroBatch = 1<<20, b.Prompts, b.MicroBatch
	tc.Rollout.MaxNewTokens, tc.Rollout.EOS, tc.Rollout.GenBatch = b.MaxNewTokens, eos, b.GenBatch
	if b.Algo == "ppo" {
		cfg := rl.DefaultPPOTrainerConfig()
		cfg.Train, cfg.SamplesPerPrompt = tc, b.GroupSize
		return rl.NewPPOTrainer(p, tok, prompts, reward, cfg)
	}
	cfg := rl.DefaultGRPOTrainerConfig()
	cfg.Train, cfg.GRPO.GroupSize = tc, b.GroupSize
	return rl.NewGRPOTrainer(p, tok, prompts, reward, cfg)
}

// rlBenchEOS is the policy's end-of-sequence token, which the bench never lets it draw.
func rlBenchEOS(p nn.LM) int {
	eos := p.VocabSize() - 1
	switch m := p.(type) {
	case *nn.GPT2LM:
		eos = min(eos, 50256)
	case *nn.LlamaLM:
		if e := m.Model.Config.EOS; len(e) > 0 && e[0] < p.VocabSize() {
			eos = e[0]
		}
	}
	return eos
}

// hashReward scores a completion by a hash of its text: cheap, and different between the
// completions of a group so that GRPO's advantages are not all zero.
func hashReward(_, completion string, _ rl.Meta) (float64, error) {
	h := fnv.New32a()
	h.Write([]byte(completion))
	return float64(h.Sum32()%1000) / 1000, nil
}

// benchTokenizer makes prompt n ("prompt <n>") promptLen token ids of its own and writes
// completions as their ids.
type benchTokenizer struct{ vocab, eos, promptLen int }

func (t benchTokenizer) Encode(text string) []int32 {
	n, _ := strconv.Atoi(strings.TrimPrefix(text, "prompt "))
	ids := make([]int32, t.promptLen)
	for j := range ids {
		id := (n*7919 + j*31 + 1) % t.vocab
		if id == t.eos {
			id = (id + 1) % t.vocab
		}
		ids[j] = int32(id)
	}
	return ids
}

func (t benchTokenizer) Decode(ids []int32) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(int(id)))
		b.WriteByte(' ')
	}
	return b.String(), nil
}

// phaseClock adds up the time of each phase the trainer reports.
type phaseClock struct {
	seconds map[rl.Phase]float64
	calls   map[rl.Phase]int
}

func newPhaseClock() *phaseClock {
	return &phaseClock{seconds: map[rl.Phase]float64{}, calls: map[rl.Phase]int{}}
}

func (c *phaseClock) Phase(p rl.Phase, d time.Duration) {
	c.seconds[p] += d.Seconds()
	c.calls[p]++
}

// decodeTally is what the rollouts' decoders did: the prefills (prompt tokens, their work and
// time, cache forks included) and the decoding steps (tokens sampled, weights and cache read,
// work).
type decodeTally struct {
	prefillSeconds             float64
	prefillTokens              int
	prefillFLOPs               float64
	decodeSteps, decodeTokens  int
	decodeFLOPs, decodeKVBytes float64
}

// benchPolicy is the policy RL trains: its decoders never draw EOS, so every completion runs
// to the most new tokens and steps are comparable, and they tally prefill and decoding.
type benchPolicy struct {
	nn.LM
	eos   int
	cost  modelCost
	track *decodeTally // nil during the warm-up
}

// Unwrap is the policy benchPolicy wraps, whose memory it takes.
func (p *benchPolicy) Unwrap() nn.LM { return p.LM }

func (p *benchPolicy) NewDecoder(B, limit int) (nn.Decoder, error) {
	d, err := p.LM.NewDecoder(B, limit)
	if err != nil {
		return nil, err
	}
	rd, ok := d.(rowDecoder)
	if !ok {
		d.Close()
		return nil, fmt.Errorf("bench rl: the model's decoder cannot decode rows at their own positions")
	}
	t := p.track
	if t == nil {
		t = &decodeTally{}
	}
	return &benchDecoder{rowDecoder: rd, eos: p.eos, cost: p.cost, t: t, pos: make([]int, B)}, nil
}

// rowDecoder is a decoder the rollouts can drive row by row.
type rowDecoder interface {
	nn.Decoder
	sample.RowDecoder
}

// benchDecoder masks EOS out of the logits and times the steps that prefill a prompt. A
// step that prefills some rows while decoding others is split by its share of tokens.
type benchDecoder struct {
	rowDecoder
	eos  int
	cost modelCost
	t    *decodeTally
	pos  []int // each row's position
}

func (d *benchDecoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	start := time.Now()
	logits, err := d.rowDecoder.StepRagged(rows, tokens)
	if err != nil {
		return nil, err
	}
	took := time.Since(start).Seconds()
	fed, prompt := 0, 0
	for k, r := range rows {
		n := len(tokens[k])
		fed += n
		if n > 1 {
			prompt += n
			for j := 1; j <= n; j++ {
				d.t.prefillFLOPs += d.cost.tokenFLOPs(d.pos[r] + j)
			}
			d.t.prefillFLOPs += 2 * d.cost.head // the logits of the last position only
		} else {
			d.t.decodeTokens++
			d.t.decodeFLOPs += d.cost.tokenFLOPs(d.pos[r]+1) + 2*d.cost.head
			d.t.decodeKVBytes += d.cost.kvBytes(d.pos[r] + 1)
		}
		d.pos[r] += n
	}
	d.t.prefillTokens += prompt
	d.t.prefillSeconds += took * float64(prompt) / float64(fed)
	if prompt < fed {
		d.t.decodeSteps++
	}
	stride := len(logits) / len(rows)
	for k := range rows {
		logits[k*stride+d.eos] = float32(math.Inf(-1))
	}
	return logits, nil
}

func (d *benchDecoder) ForkPrefix(src, n int, dst []int) error {
	start := time.Now()
	err := d.rowDecoder.ForkPrefix(src, n, dst)
	d.t.prefillSeconds += time.Since(start).Seconds()
	for _, r := range dst {
		d.pos[r] = n
	}
	return err
}

func (d *benchDecoder) ResetRow(row int) error {
	d.pos[row] = 0
	return d.rowDecoder.ResetRow(row)
}

func (d *benchDecoder) Reset() {
	clear(d.pos)
	d.rowDecoder.Reset()
}

// report lays out the timed steps' phases (clock and t hold their sums) against the FMA peak
// p (measured on th threads) and the read bandwidth bw.
func (b *rlBench) report(be tensor.Backend, clock *phaseClock, t *decodeTally, stepSeconds float64, p float64, th int, bw float64) map[string]any {
	cost, steps := b.cost, b.Steps
	n := float64(steps)
	sec := func(ph rl.Phase) float64 { return clock.seconds[ph] / n }
	rows := b.Prompts * b.GroupSize
	T := b.PromptLen + b.MaxNewTokens - 1 // the log-prob passes' inputs: the sequence but its last token
	sampled := float64(rows * b.MaxNewTokens)
	seq := cost.seqFLOPs(rows, T, rows*b.MaxNewTokens)
	prefill := t.prefillSeconds / n
	decode := sec(rl.PhaseRollout) - prefill
	phases := []map[string]any{
		computePhase("prefill", prefill, float64(t.prefillTokens)/n, t.prefillFLOPs/n, p),
		decodePhase(decode, t, cost, n, p, bw),
		{"phase": "reward", "seconds": sec(rl.PhaseReward), "tokens": sampled, "tokens_per_s": perSecond(sampled, sec(rl.PhaseReward))},
	}
	if b.Algo == "ppo" {
		phases = append(phases, computePhase("old_logprobs", sec(rl.PhaseOldLogp), float64(rows*T), seq, p))
	} else {
		phases = append(phases, map[string]any{"phase": "old_logprobs", "seconds": 0.0, "in": "update"})
	}
	updates := float64(clock.calls[rl.PhaseUpdate]) / n
	phases = append(phases,
		computePhase("reference", sec(rl.PhaseReference), float64(rows*T), seq, p),
		computePhase("update", sec(rl.PhaseUpdate), updates*float64(rows*T), (1+b.backwardProducts)*updates*seq, p),
		optimizerPhase(sec(rl.PhaseOptimizer), float64(clock.calls[rl.PhaseOptimizer])/n, sampled, b.trainedParams, bw))
	var sum float64
	for _, ph := range phases {
		sum += ph["seconds"].(float64)
	}
	step := stepSeconds / n
	rep := map[string]any{"bench": "rl", "algo": b.Algo, "group_size": b.GroupSize, "prompts": b.Prompts, "prompt_len": b.PromptLen,
		"max_new_tokens": b.MaxNewTokens, "rows": rows, "steps": steps, "phases": phases,
		"step_seconds": step, "phases_seconds": sum, "other_seconds": step - sum,
		"tokens_per_s": sampled / step, "rollout_tokens_per_s": perSecond(sampled, sec(rl.PhaseRollout)),
		"read_bandwidth_gb_per_s": bw / 1e9, "weight_bytes": cost.weightBytes, "peak_rss_bytes": sysinfo.PeakRSS()}
	if p > 0 {
		setPeak(rep, be, p, th)
	}
	return rep
}

// computePhase is a compute-bound phase: its tokens/s and GFLOP/s against the FMA peak p.
func computePhase(name string, seconds, tokens, flops, p float64) map[string]any {
	ph := map[string]any{"phase": name, "seconds": seconds, "tokens": tokens, "tokens_per_s": perSecond(tokens, seconds),
		"gflop": flops / 1e9, "gflops": perSecond(flops/1e9, seconds)}
	if p > 0 {
		ph["peak_fraction"] = ph["gflops"].(float64) / p
	}
	return ph
}

// decodePhase is the decoding steps: tokens fed back per second, and the bytes they read
// (every weight once per step, each row's key/value cache) against the read bandwidth bw,
// with their work against the FMA peak p, which bounds a wide batch.
func decodePhase(seconds float64, t *decodeTally, cost modelCost, n, p, bw float64) map[string]any {
	bytes := (float64(t.decodeSteps)*cost.weightBytes + t.decodeKVBytes) / n
	ph := computePhase("decode", seconds, float64(t.decodeTokens)/n, t.decodeFLOPs/n, p)
	ph["decode_steps"] = float64(t.decodeSteps) / n
	ph["gb_read"] = bytes / 1e9
	ph["gb_per_s"] = perSecond(bytes/1e9, seconds)
	if bw > 0 {
		ph["bandwidth_fraction"] = perSecond(bytes, seconds) / bw
	}
	return ph
}

// optimizerPhase is AdamW: it reads the parameters, gradients and both moments and writes
// three of them back, 28 bytes a parameter per update, against the read bandwidth bw.
func optimizerPhase(seconds, updates, sampled float64, params int, bw float64) map[string]any {
	bytes := updates * 28 * float64(params)
	ph := map[string]any{"phase": "optimizer", "seconds": seconds, "updates": updates, "tokens": sampled,
		"tokens_per_s": perSecond(sampled, seconds), "gb_per_s": perSecond(bytes/1e9, seconds)}
	if bw > 0 {
		ph["bandwidth_fraction"] = perSecond(bytes, seconds) / bw
	}
	return ph
}

// perSecond is x per second of seconds, 0 when no time was measured.
func perSecond(x, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return x / seconds
}
