package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// additionSchedule sets the learning-rate schedule and answer length that suit the default
// addition task after the default sft run; the algorithms differ in steps and prompts per step.
func additionSchedule(t *rl.TrainConfig, steps, promptsPerStep int) {
	t.Steps, t.PromptsPerStep = steps, promptsPerStep
	t.LR, t.MinLR, t.Warmup = 4e-4, 4e-5, 10
	t.Rollout.MaxNewTokens = 8
}

func addTaskFlags(fs *pflag.FlagSet, t *rlrun.Tasks) {
	fs.StringVar(&t.Spec, "task", t.Spec, "built-in task, or tasks mixed by ratio, e.g. addition:0.8,reverse:0.2 (tasks: "+strings.Join(tasks.BuiltinNames, ", ")+")")
	a := &t.Options.Addition
	fs.IntVar(&a.MinDigits, "min-digits", a.MinDigits, "addition: fewest digits of an operand")
	fs.IntVar(&a.MaxDigits, "max-digits", a.MaxDigits, "addition: most digits of an operand")
	fs.BoolVar(&a.Spaced, "spaced", a.Spaced, "addition: one token per digit (\"1 2 + 3 4 =\"); --spaced=false writes \"12+34=\"")
	fs.BoolVar(&a.ReversedAnswer, "reversed-answer", a.ReversedAnswer, "addition: write the sum units digit first (easier to learn)")
	fs.Float64Var(&a.HeldOutFraction, "held-out-fraction", a.HeldOutFraction, "addition: share of problems held out for evaluation")
	fs.BoolVar(&a.PartialCredit, "partial-credit", a.PartialCredit, "addition: score well-formed wrong answers 0.1..0.5 by matching digits instead of 0")
	c := &t.Options.Copy
	fs.IntVar(&c.MinLen, "copy-min-len", c.MinLen, "copy/reverse: fewest letters")
	fs.IntVar(&c.MaxLen, "copy-max-len", c.MaxLen, "copy/reverse: most letters")
	fs.StringVar(&c.Alphabet, "copy-alphabet", c.Alphabet, "copy/reverse: letters to draw from")
	fs.StringVar(&c.EndMarker, "copy-end-marker", c.EndMarker, "copy/reverse: fixed text after the letters (a forced token; empty for none)")
	fs.Float64Var(&c.HeldOutFraction, "copy-held-out-fraction", c.HeldOutFraction, "copy/reverse: share of strings held out for evaluation")
	fs.BoolVar(&c.PartialCredit, "copy-partial-credit", c.PartialCredit, "copy/reverse: score well-formed wrong answers 0.1..0.5 instead of 0")
	fs.BoolVar(&t.Shuffle, "shuffle-tasks", t.Shuffle, "with several tasks, pick each prompt's task at random by weight (default: exact interleaving by ratio)")
	fs.Uint64Var(&t.DataSeed, "data-seed", t.DataSeed, "seed of the training prompt stream")
	fs.IntVar(&t.EvalSize, "eval-size", t.EvalSize, "held-out problems per task, or with --dataset at most this many in all, for the accuracy before and after; its standard error, printed beside it, is at most 50/sqrt(n) points (0: no evaluation)")
	fs.Uint64Var(&t.EvalSeed, "eval-seed", t.EvalSeed, "seed that picks the held-out problems")
	fs.IntVar(&t.EvalMax, "eval-max-new-tokens", t.EvalMax, "longest answer generated in evaluation (with --env, each turn is as long as --max-new-tokens allows)")
	fs.IntVar(&t.EvalSamples, "eval-samples", t.EvalSamples, "answers sampled per held-out problem at the training temperature for the sampled accuracy (0: greedy only)")
	fs.IntVar(&t.EvalBatch, "eval-batch", t.EvalBatch, "held-out answers decoded together, a finished answer's slot going to the next (0: all at once; memory grows with it)")
	fs.BoolVar(&t.NoEvalCache, "no-eval-cache", t.NoEvalCache, "measure the held-out accuracy before training even when an earlier run from the same --init, held-out set and settings cached it")
	addDatasetFlags(fs, &t.Data)
}

// addRLTrainFlags registers the options every RL trainer shares.
func addRLTrainFlags(fs *pflag.FlagSet, c *rl.TrainConfig) {
	fs.IntVar(&c.Steps, "steps", c.Steps, "RL steps (each: sample a batch, score it, update)")
	fs.IntVar(&c.PromptsPerStep, "prompts", c.PromptsPerStep, "distinct prompts per step")
	fs.Float64Var(&c.Rollout.Sampling.Temperature, "temperature", c.Rollout.Sampling.Temperature, "sampling temperature, also used by the loss's log-probs")
	fs.IntVar(&c.Rollout.Sampling.TopK, "top-k", c.Rollout.Sampling.TopK, "sample from the k most likely tokens, ties at the k-th kept (0: all; see --replay-truncation)")
	fs.Float64Var(&c.Rollout.Sampling.TopP, "top-p", c.Rollout.Sampling.TopP, "sample from the smallest set of most likely tokens reaching this probability, ties kept (1: all; see --replay-truncation)")
	fs.BoolVar(&c.ReplayTruncation, "replay-truncation", c.ReplayTruncation, "with --top-k or --top-p, compute the loss's log-probs (policy, old, reference) and entropy under the same truncated distribution the tokens were sampled from, so training is on-policy; --replay-truncation=false uses the full distribution (an off-policy bias)")
	fs.IntVar(&c.Rollout.MaxNewTokens, "max-new-tokens", c.Rollout.MaxNewTokens, "longest completion, EOS included (also dr_grpo's normaliser); with --env, longest turn")
	fs.IntVar(&c.Rollout.GenBatch, "gen-batch", c.Rollout.GenBatch, "rows decoded together; a finished row's slot goes to the next waiting row (0: a slot for every row)")
	fs.IntVar(&c.Mu, "mu", c.Mu, "optimizer updates per batch (GRPO's mu, PPO's epochs); the first uses ratio 1")
	addOptimizerFlags(fs, &c.Settings)
	fs.IntVar(&c.RefSyncEvery, "ref-sync-every", c.RefSyncEvery, "move the reference model toward the policy every this many steps (0: never)")
	fs.Float64Var(&c.RefMixAlpha, "ref-mix-alpha", c.RefMixAlpha, "reference sync blend: ref = alpha*policy + (1-alpha)*ref (1: copy; small alpha with --ref-sync-every 1: an EMA)")
	fs.IntVar(&c.MicroBatch, "micro-batch", c.MicroBatch, "most rows per forward pass (0: the whole batch at once; -1: as many as keep a pass's activations within an eighth of the parameters, gradients and AdamW, the batch's longest row deciding)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "sampling seed (with --data-seed, fixes the run on the CPU)")
	fs.BoolVar(&c.KLMetrics, "kl-metrics", c.KLMetrics, "keep a reference model for the KL diagnostics even when no loss term uses it")
}

// addLoRAFlags registers the LoRA adapters' flags.
func addLoRAFlags(fs *pflag.FlagSet, l *rlrun.LoRA) {
	fs.IntVar(&l.Rank, "lora-rank", l.Rank, "train LoRA adapters of this rank instead of every weight (Llama-family models; 0: full fine-tuning); the reference model is then the frozen base")
	fs.Float64Var(&l.Alpha, "lora-alpha", l.Alpha, "LoRA scale numerator: adapters add (alpha/rank)·B·A (0: twice the rank)")
	fs.StringSliceVar(&l.Targets, "lora-targets", l.Targets, "linear layers given adapters, by Hugging Face name (default: all of "+strings.Join(llama.LoRAModules, ", ")+")")
	fs.Uint64Var(&l.Seed, "lora-seed", l.Seed, "seed of the adapters' random A matrices")
}
