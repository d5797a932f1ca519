package main

import (
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl"
)

// defaultPPOConfig is tuned for the default addition task after the default sft run.
func defaultPPOConfig() rl.PPOTrainerConfig {
	c := rl.DefaultPPOTrainerConfig()
	additionSchedule(&c.Train, 600, 64)
	c.SamplesPerPrompt = 4
	c.MiniBatches = 2
	c.CriticWarmup = 10
	c.Train.MicroBatch = rl.MicroBatchAuto
	c.ValueLR = 3e-3
	return c
}

func addPPOFlags(fs *pflag.FlagSet, c *rl.PPOTrainerConfig) {
	p := &c.PPO
	fs.Float64Var(&p.Gamma, "gamma", p.Gamma, "discount per token")
	fs.Float64Var(&p.Lam, "lam", p.Lam, "GAE lambda")
	fs.Float64Var(&p.ClipRange, "cliprange", p.ClipRange, "clip the policy ratio to 1 +- this")
	fs.Float64Var(&p.ClipRangeValue, "cliprange-value", p.ClipRangeValue, "clip new values to old values +- this")
	fs.Float64Var(&p.VFCoef, "vf-coef", p.VFCoef, "weight of the value loss")
	fs.StringVar((*string)(&p.KLEstimator), "kl-estimator", string(p.KLEstimator), "KL estimator in the reward: k1, k2 or k3")
	fs.Float64Var(&p.MissingEOSPenalty, "missing-eos-penalty", p.MissingEOSPenalty, "subtracted from the score of completions cut off without an EOS")
	fs.BoolVar(&p.WhitenAdvantages, "whiten-advantages", p.WhitenAdvantages, "normalise advantages over the batch's response tokens")
	fs.Float64Var(&p.EntropyCoef, "entropy-coef", p.EntropyCoef, "entropy bonus weight (0: off)")
	k := &c.KLControl
	fs.StringVar(&k.Kind, "kl-control", k.Kind, "KL coefficient controller: fixed or adaptive")
	fs.Float64Var(&k.InitCoef, "kl-coef", k.InitCoef, "KL penalty coefficient in the reward (the adaptive controller's start; 0 and fixed: no reference model)")
	fs.Float64Var(&k.Target, "kl-target", k.Target, "adaptive controller: target KL per sequence (nats)")
	fs.Float64Var(&k.Horizon, "kl-horizon", k.Horizon, "adaptive controller: horizon in samples")
	v := &c.ValueHead
	fs.StringVar(&v.Init, "value-init", v.Init, "value head initialisation: zero, constant or random")
	fs.Float64Var(&v.InitValue, "value-init-value", v.InitValue, "the constant weight (constant) or the standard deviation (random)")
	fs.Float64Var(&v.Dropout, "value-dropout", v.Dropout, "dropout probability on the hidden states before the value head while training")
	fs.BoolVar(&v.Detach, "value-detach", v.Detach, "train only the value head with the value loss (the shared trunk follows the policy loss)")
	fs.Uint64Var(&v.Seed, "value-seed", v.Seed, "seed of the value head's random init and dropout")
	fs.IntVar(&c.SamplesPerPrompt, "group-size", c.SamplesPerPrompt, "completions per prompt (as grpo's --group-size)")
	fs.IntVar(&c.SamplesPerPrompt, "samples-per-prompt", c.SamplesPerPrompt, "completions per prompt")
	fs.MarkDeprecated("samples-per-prompt", "use --group-size")
	fs.IntVar(&c.MiniBatches, "num-mini-batches", c.MiniBatches, "mini-batches per epoch, reshuffled each epoch, one optimizer update each (advantages use the whole batch)")
	fs.IntVar(&c.CriticWarmup, "critic-warmup", c.CriticWarmup, "first steps that train only the value head (policy frozen)")
	fs.Float64Var(&c.ValueLR, "value-lr", c.ValueLR, "value head learning rate (0: the policy's)")
}

// ppoCommand is `vkgrad ppo`.
func ppoCommand() command {
	return rlCommand("ppo", "RL fine-tuning with PPO and a value head, the same prompts, rewards and models as grpo", func() rlAlgorithm {
		cfg := defaultPPOConfig()
		return rlAlgorithm{name: "ppo", modelHelp: "model to fine-tune: a vkgrad sft run directory or any checkpoint (required); a saved value head is restored",
			config:    &cfg,
			addFlags:  func(fs *pflag.FlagSet) { addRLTrainFlags(fs, &cfg.Train); addPPOFlags(fs, &cfg) },
			Algorithm: rlrun.PPO(&cfg),
		}
	})
}
