// Package rlrun holds the run machinery of vkgrad's fine-tuning commands (sft, grpo, ppo).
//
// The commands parse their flags in package main into the settings types here, which are
// also what a run's config.json keeps ([RunMeta]); the machinery beyond the flags lives here,
// one idea to a file:
//   - config.go: the run's config.json and its run-loop options;
//   - tasks.go: the prompts, rewards and held-out set a run draws from, and their evaluation;
//   - datasets.go: prompts from a dataset file or Hugging Face dataset, and their rewards;
//   - env.go: the environment that makes prompts multi-turn episodes;
//   - family.go: the tokenizer side of a model (tokenizer, EOS, chat template);
//   - model.go: a policy's LoRA adapters and vocabulary;
//   - resume.go: the checkpoint --resume continues, and the state a command keeps in it;
//   - evalcache.go: the held-out accuracy before training, cached per initial model and settings;
//   - completions.go: the sampled completions a run logs beside its metrics.
package rlrun
