package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/bench"
	"github.com/vkgrad/vkgrad/internal/precision"
	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn"
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

// benchRL times RL steps of --preset (or --init) on synthetic prompts.
func (f *benchFlags) benchRL(be tensor.Backend, s bench.Shape) (map[string]any, error) {
	r := &f.rl
	if err := r.validate(); err != nil {
		return nil, err
	}
	policy, err := f.rlPolicy(be, s)
	if err != nil {
		return nil, err
	}
	if n := r.promptLen + r.maxNew; n > policy.MaxSeqLen() {
		return nil, fmt.Errorf("--prompt-len %d + --max-new-tokens %d exceed the model's context of %d", r.promptLen, r.maxNew, policy.MaxSeqLen())
	}
	return bench.RL(be, policy, bench.RLOptions{Algo: r.algo, GroupSize: r.groupSize, Prompts: r.prompts, PromptLen: r.promptLen,
		MaxNewTokens: r.maxNew, MicroBatch: r.microBatch, GenBatch: r.genRows, Steps: f.steps, Warmup: f.warmup,
		LossScaler: precision.LossScaler(f.precision)}) // as a run's steps in this precision
}

// rlPolicy is the model to time: --init's, or --preset's with random weights.
func (f *benchFlags) rlPolicy(be tensor.Backend, s bench.Shape) (nn.LM, error) {
	if f.rl.init != "" {
		p, _, err := rlrun.LoadPolicy(be, f.rl.init)
		if err != nil {
			return nil, fmt.Errorf("--init: %w", err)
		}
		return p, nil
	}
	// The rollouts never need a Llama-family preset's full context, which sizes nothing here
	// but the length check.
	return bench.RandomPolicy(be, s, f.rl.promptLen+f.rl.maxNew)
}
