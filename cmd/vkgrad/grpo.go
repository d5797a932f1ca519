package main

import (
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl"
)

// defaultGRPOConfig is tuned for the default addition task after the default sft run.
func defaultGRPOConfig() rl.GRPOTrainerConfig {
	c := rl.DefaultGRPOTrainerConfig()
	additionSchedule(&c.Train, 800, 32)
	c.GRPO.GroupSize = 8
	c.Train.MicroBatch = rl.MicroBatchAuto
	return c
}

func addGRPOFlags(fs *pflag.FlagSet, c *rl.GRPOConfig) {
	fs.IntVar(&c.GroupSize, "group-size", c.GroupSize, "completions sampled per prompt (one group)")
	fs.StringVar((*string)(&c.LossType), "loss-type", string(c.LossType), "token aggregation: grpo, bnpo, dr_grpo or dapo")
	fs.StringVar((*string)(&c.ScaleRewards), "scale-rewards", string(c.ScaleRewards), "divide centred rewards by the std of the group, the batch, or none")
	fs.Float64Var(&c.AdvantageEps, "advantage-eps", c.AdvantageEps, "added to the std before dividing")
	fs.Float64Var(&c.EpsilonLow, "epsilon-low", c.EpsilonLow, "clip the ratio below at 1-epsilon-low")
	fs.Float64Var(&c.EpsilonHigh, "epsilon-high", c.EpsilonHigh, "clip the ratio above at 1+epsilon-high (DAPO's clip-higher: 0.28)")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "weight of the per-token KL penalty against the reference (0: no reference model)")
	fs.StringVar((*string)(&c.KLEstimator), "kl-estimator", string(c.KLEstimator), "KL estimator for the penalty and diagnostics: k1, k2 or k3")
	fs.Float64Var(&c.EntropyCoef, "entropy-coef", c.EntropyCoef, "entropy bonus weight (0: off)")
	fs.Float64Var(&c.MinTokenRatio, "min-token-ratio", c.MinTokenRatio, "drop tokens whose ratio is below this from the loss (0: off)")
	fs.Float64Var(&c.MaxTokenRatio, "max-token-ratio", c.MaxTokenRatio, "drop tokens whose ratio is above this from the loss (0: off)")
	fs.IntVar(&c.MinLearnableTokens, "min-learnable-tokens", c.MinLearnableTokens, "skip a step with fewer learnable tokens (0: off)")
	fs.Float64Var(&c.MinLearnableFraction, "min-learnable-fraction", c.MinLearnableFraction, "skip a step whose learnable share of the response tokens is below this (0: off)")
	fs.Float64Var(&c.KLHardCap, "kl-hard-cap", c.KLHardCap, "largest mean per-token KL accepted (0: off)")
	fs.StringVar((*string)(&c.KLCapAction), "kl-cap-action", string(c.KLCapAction), "past the cap: skip the step or stop training")
}

// grpoCommand is `vkgrad grpo`.
func grpoCommand() command {
	return rlCommand("grpo", "RL fine-tuning with GRPO on a built-in task or a --dataset with rewards (from an sft run or a Llama/Qwen directory)", func() rlAlgorithm {
		cfg := defaultGRPOConfig()
		return rlAlgorithm{name: "grpo", modelHelp: "model to fine-tune: a vkgrad sft run directory or any checkpoint (required)",
			config:    &cfg,
			addFlags:  func(fs *pflag.FlagSet) { addRLTrainFlags(fs, &cfg.Train); addGRPOFlags(fs, &cfg.GRPO) },
			Algorithm: rlrun.GRPO(&cfg),
		}
	})
}
