package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/tensor"
)

// rlBenchFlags are bench rl's own flags.
type rlBenchFlags struct {
	algo                string
	groupSize, prompts  int
	promptLen, maxNew   int
	init                string
	microBatch, genRows int
	trainedParams       int // set when the policy is made
	// backwardProducts is the backward pass's products per forward one: 2 (the inputs' and
	// the weights' gradients), 1 when only LoRA adapters train and the weights need none.
	backwardProducts float64
}

func (f *rlBenchFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.algo, "algo", "grpo", "bench rl: grpo or ppo")
	fs.IntVar(&f.groupSize, "group-size", 8, "bench rl: completions per prompt (PPO's samples per prompt)")
	fs.IntVar(&f.prompts, "prompts", 4, "bench rl: prompts per step")
	fs.IntVar(&f.promptLen, "prompt-len", 32, "bench rl: tokens per prompt")
	fs.IntVar(&f.maxNew, "max-new-tokens", 32, "bench rl: tokens per completion (EOS is never drawn, so every completion has this length)")
	fs.StringVar(&f.init, "init", "", "bench rl: the model to time (a run, checkpoint or Hugging Face directory) instead of --preset's random weights")
	fs.IntVar(&f.microBatch, "micro-batch", rl.MicroBatchAuto, "bench rl: rows per forward pass of the log-probs and updates (0: all; -1: as grpo's default sizes them)")
	fs.IntVar(&f.genRows, "gen-batch", 0, "bench rl: rows decoded together (0: every row of the step)")
}

// validate names the first bad bench rl flag.
func (f *rlBenchFlags) validate() error {
	switch {
	case f.algo != "grpo" && f.algo != "ppo":
		return fmt.Errorf("--algo %q: want grpo or ppo", f.algo)
	case f.groupSize < 1:
		return fmt.Errorf("--group-size %d: want >= 1", f.groupSize)
	case f.prompts < 1:
		return fmt.Errorf("--prompts %d: want >= 1", f.prompts)
	case f.promptLen < 1:
		return fmt.Errorf("--prompt-len %d: want >= 1", f.promptLen)
	case f.maxNew < 1:
		return fmt.Errorf("--max-new-tokens %d: want >= 1", f.maxNew)
	case f.microBatch < rl.MicroBatchAuto:
		return fmt.Errorf("--micro-batch %d: want >= 0 (0: all rows) or -1 (auto)", f.microBatch)
	case f.genRows < 0:
		return fmt.Errorf("--gen-batch %d: want >= 0 (0: all rows)", f.genRows)
	}
	return nil
}

// timedTrainer is what bench rl drives of either trainer.
type timedTrainer interface {
	TrainStep() (*rl.StepReport, error)
	SetPhaseTimer(rl.PhaseTimer)
	SetLossScaler(*train.LossScaler)
}

// benchRL times RL steps of --preset (or --init) on synthetic prompts and reports each
// phase's time, tokens/s and its fraction of the limit it is bound by.
func (f *benchFlags) benchRL(be tensor.Backend, s benchShape) (map[string]any, error) {
	r := &f.rl
	if err := r.validate(); err != nil {
		return nil, err
	}
	policy, cost, err := f.rlPolicy(be, s)
	if err != nil {
		return nil, err
	}
	if n := r.promptLen + r.maxNew; n > policy.MaxSeqLen() {
		return nil, fmt.Errorf("--prompt-len %d + --max-new-tokens %d exceed the model's context of %d", r.promptLen, r.maxNew, policy.MaxSeqLen())
	}
	r.trainedParams, r.backwardProducts = policy.NumParams(), 2
	if lp, ok := policy.(*nn.LlamaLM); ok {
		if _, lora := lp.Model.LoRA(); lora {
			r.backwardProducts = 1
		}
	}
	eos := rlBenchEOS(policy)
	wrapped := &benchPolicy{Policy: policy, eos: eos, cost: cost}
	tr, err := r.trainer(wrapped, eos)
	if err != nil {
		return nil, err
	}
	tr.SetLossScaler(lossScalerFor(f.precision)) // as a run's steps in this precision
	for i := 0; i < f.warmup; i++ {
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
	for i := 0; i < f.steps; i++ {
		rep, err := tr.TrainStep()
		if err != nil {
			return nil, err
		}
		stepSeconds += rep.Seconds
	}
	p, th := peak(be)
	p = max(p, peakBefore)
	return r.report(clock, wrapped.track, cost, stepSeconds, f.steps, p, th, bw), nil
}

// trainer builds the GRPO or PPO trainer of a step of the flags' shape on synthetic prompts.
func (r *rlBenchFlags) trainer(p rl.Policy, eos int) (timedTrainer, error) {
	tok := benchTokenizer{vocab: p.VocabSize(), eos: eos, promptLen: r.promptLen}
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
	tc.Steps, tc.PromptsPerStep, tc.MicroBatch = 1<<20, r.prompts, r.microBatch
	tc.Rollout.MaxNewTokens, tc.Rollout.EOS, tc.Rollout.GenBatch = r.maxNew, eos, r.genRows
	if r.algo == "ppo" {
		cfg := rl.DefaultPPOTrainerConfig()
		cfg.Train, cfg.SamplesPerPrompt = tc, r.groupSize
		return rl.NewPPOTrainer(p, tok, prompts, reward, cfg)
	}
	cfg := rl.DefaultGRPOTrainerConfig()
	cfg.Train, cfg.GRPO.GroupSize = tc, r.groupSize
	return rl.NewGRPOTrainer(p, tok, prompts, reward, cfg)
}

// rlPolicy is the model to time: --init's, or --preset's with random weights.
func (f *benchFlags) rlPolicy(be tensor.Backend, s benchShape) (rl.Policy, modelCost, error) {
	if f.rl.init != "" {
		p, _, err := (&rlRun{be: be}).loadPolicy(f.rl.init)
		if err != nil {
			return nil, modelCost{}, fmt.Errorf("--init: %w", err)
		}
		return p, costOfPolicy(p), nil
	}
	if s.isLlama {
		m, err := newRandomLlama(be, s.llama, f.loraRank)
		if err != nil {
			return nil, modelCost{}, err
		}
		// The rollouts never need the preset's full context, which sizes nothing here but
		// the length check.
		p := &nn.LlamaLM{Model: m, MaxLen: f.rl.promptLen + f.rl.maxNew}
		return p, costOfPolicy(p), nil
	}
	m, err := gpt2.New(be, s.gpt2)
	if err != nil {
		return nil, modelCost{}, err
	}
	if err := m.InitRandom(1); err != nil {
		return nil, modelCost{}, err
	}
	p := nn.GPT2(m)
	return p, costOfPolicy(p), nil
}

// rlBenchEOS is the policy's end-of-sequence token, which the bench never lets it draw.
func rlBenchEOS(p rl.Policy) int {
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

// modelCost is the work and traffic of a model's tokens that bench rl and bench sample
// measure against the machine's limits.
type modelCost struct {
	body        float64 // weights of the blocks' matrix products
	head        float64 // weights of the lm head (vocabulary x width)
	layers      int
	qWidth      int     // query heads x head width: attention's work per attended position
	kvWidth     int     // key (or value) width of a layer, per cached position
	weightBytes float64 // bytes a decoding step reads: every weight but the looked-up embedding
}

func gpt2Cost(c gpt2.Config) modelCost {
	C := c.Channels
	return modelCost{body: float64(12 * c.NumLayers * C * C), head: float64(c.PaddedVocabSize * C), layers: c.NumLayers,
		qWidth: C, kvWidth: C, weightBytes: 4 * float64(c.NumParams()-c.MaxSeqLen*C)}
}

func llamaCost(c llama.Config) modelCost {
	head := float64(c.Vocab * c.Hidden)
	body := float64(c.NumParams()) - head // the embedding is looked up
	bytes := 4 * float64(c.NumParams())
	if !c.TieEmbeddings {
		body -= head
		bytes -= 4 * head
	}
	return modelCost{body: body, head: head, layers: c.Layers, qWidth: c.Heads * c.HeadDim, kvWidth: c.KVHeads * c.HeadDim, weightBytes: bytes}
}

func costOfPolicy(p rl.Policy) modelCost {
	switch m := p.(type) {
	case *nn.GPT2LM:
		return gpt2Cost(m.Model.Config)
	case *nn.LlamaLM:
		return llamaCost(m.Model.Config)
	}
	return modelCost{}
}

// tokenFLOPs is the forward work of one token attending ctx positions, without the lm head:
// two per weight, and four per query width per layer per attended position (scores and mix).
func (m modelCost) tokenFLOPs(ctx int) float64 {
	return 2*m.body + 4*float64(m.layers*m.qWidth*ctx)
}

// seqFLOPs is a causal forward pass over n rows of T positions with the lm head on sel of them.
func (m modelCost) seqFLOPs(n, T, sel int) float64 {
	return float64(n)*(float64(T)*2*m.body+4*float64(m.layers*m.qWidth)*float64(T)*float64(T+1)/2) + float64(sel)*2*m.head
}

// kvBytes is the key/value cache a token attending ctx positions reads.
func (m modelCost) kvBytes(ctx int) float64 { return 2 * 4 * float64(m.layers*m.kvWidth*ctx) }

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

// benchPolicy is the policy bench rl trains: its decoders never draw EOS, so every completion
// runs to --max-new-tokens and steps are comparable, and they tally prefill and decoding.
type benchPolicy struct {
	rl.Policy
	eos   int
	cost  modelCost
	track *decodeTally // nil during the warm-up
}

// Unwrap is the policy benchPolicy wraps, whose memory it takes.
func (p *benchPolicy) Unwrap() rl.Policy { return p.Policy }

func (p *benchPolicy) NewDecoder(B, limit int) (rl.Decoder, error) {
	d, err := p.Policy.NewDecoder(B, limit)
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
	rl.Decoder
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

// report lays out steps' phases (clock and t hold their sums) against the FMA peak p (measured
// on th threads) and the read bandwidth bw.
func (r *rlBenchFlags) report(clock *phaseClock, t *decodeTally, cost modelCost, stepSeconds float64, steps int, p float64, th int, bw float64) map[string]any {
	n := float64(steps)
	sec := func(ph rl.Phase) float64 { return clock.seconds[ph] / n }
	rows := r.prompts * r.groupSize
	T := r.promptLen + r.maxNew - 1 // the log-prob passes' inputs: the sequence but its last token
	sampled := float64(rows * r.maxNew)
	seq := cost.seqFLOPs(rows, T, rows*r.maxNew)
	prefill := t.prefillSeconds / n
	decode := sec(rl.PhaseRollout) - prefill
	phases := []map[string]any{
		computePhase("prefill", prefill, float64(t.prefillTokens)/n, t.prefillFLOPs/n, p),
		decodePhase(decode, t, cost, n, p, bw),
		{"phase": "reward", "seconds": sec(rl.PhaseReward), "tokens": sampled, "tokens_per_s": perSecond(sampled, sec(rl.PhaseReward))},
	}
	if r.algo == "ppo" {
		phases = append(phases, computePhase("old_logprobs", sec(rl.PhaseOldLogp), float64(rows*T), seq, p))
	} else {
		phases = append(phases, map[string]any{"phase": "old_logprobs", "seconds": 0.0, "in": "update"})
	}
	updates := float64(clock.calls[rl.PhaseUpdate]) / n
	phases = append(phases,
		computePhase("reference", sec(rl.PhaseReference), float64(rows*T), seq, p),
		computePhase("update", sec(rl.PhaseUpdate), updates*float64(rows*T), (1+r.backwardProducts)*updates*seq, p),
		optimizerPhase(sec(rl.PhaseOptimizer), float64(clock.calls[rl.PhaseOptimizer])/n, sampled, r.trainedParams, bw))
	var sum float64
	for _, ph := range phases {
		sum += ph["seconds"].(float64)
	}
	step := stepSeconds / n
	rep := map[string]any{"bench": "rl", "algo": r.algo, "group_size": r.groupSize, "prompts": r.prompts, "prompt_len": r.promptLen,
		"max_new_tokens": r.maxNew, "rows": rows, "steps": steps, "phases": phases,
		"step_seconds": step, "phases_seconds": sum, "other_seconds": step - sum,
		"tokens_per_s": sampled / step, "rollout_tokens_per_s": perSecond(sampled, sec(rl.PhaseRollout)),
		"read_bandwidth_gb_per_s": bw / 1e9, "weight_bytes": cost.weightBytes, "peak_rss_bytes": sysinfo.PeakRSS()}
	if p > 0 {
		setPeak(rep, p, th)
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

// printRLBench writes bench rl's report as a table of phases.
func printRLBench(r map[string]any) {
	fmt.Fprintf(stdout, "rl (%s) on %s, preset %s: %v prompts x %v completions, %v prompt + %v new tokens\n",
		r["algo"], r["device"], r["preset"], r["prompts"], r["group_size"], r["prompt_len"], r["max_new_tokens"])
	fmt.Fprintf(stdout, "  %-13s %10s %7s %11s %10s %8s %9s %8s\n", "phase", "seconds", "share", "tokens/s", "GFLOP/s", "of FMA", "GB/s", "of read")
	step := toFloat(r["step_seconds"])
	for _, ph := range r["phases"].([]map[string]any) {
		s := toFloat(ph["seconds"])
		if in, ok := ph["in"]; ok {
			fmt.Fprintf(stdout, "  %-13v %10s  (in %v)\n", ph["phase"], "-", in)
			continue
		}
		fmt.Fprintf(stdout, "  %-13v %10.4f %6.1f%% %11.1f %10s %8s %9s %8s\n", ph["phase"], s, 100*s/step, toFloat(ph["tokens_per_s"]),
			optional(ph["gflops"], "%.2f"), optional(ph["peak_fraction"], "%.1f%%", 100), optional(ph["gb_per_s"], "%.2f"), optional(ph["bandwidth_fraction"], "%.1f%%", 100))
	}
	for _, k := range []string{"step_seconds", "phases_seconds", "other_seconds", "tokens_per_s", "rollout_tokens_per_s", "peak_gflops", "peak_threads",
		"read_bandwidth_gb_per_s", "weight_bytes", "peak_rss_bytes"} {
		if v, ok := r[k]; ok {
			fmt.Fprintf(stdout, "  %-26s %s\n", k, readable(v))
		}
	}
}
