// Package rlrun holds the run machinery of vkgrad's fine-tuning commands (sft, grpo, ppo).
//
// The commands parse their flags in package main into a [Run], whose settings are also what
// a run's config.json keeps ([RunMeta]), and call it: [Run.RL] for grpo and ppo, [Run.SFT]
// for sft. The machinery beyond the flags lives here, one idea to a file:
//   - run.go: a run's settings, and what start opens for it (device, tokenizer, prompts, files);
//   - cmdline.go: what the command line tells a run (the flags given, checked on --resume);
//   - algorithm.go: a grpo or ppo run from its model to its last step, and their trainers;
//   - sft.go: an sft run from its model (a new one of a preset's shape) to its last step;
//   - tuneloop.go: the steps of any run, with its evaluations, checkpoints and results;
//   - policy.go: the model a run trains, from --init or the resumed run;
//   - config.go: the run's config.json and its run-loop options;
//   - tasks.go: the prompts, rewards and held-out set a run draws from, and their evaluation;
//   - datasets.go: prompts from a dataset file or Hugging Face dataset, and their rewards;
//   - env.go: the environment that makes prompts multi-turn episodes;
//   - family.go: the tokenizer side of a model (tokenizer, EOS, chat template);
//   - model.go: a policy's LoRA adapters and vocabulary;
//   - resume.go: the checkpoint --resume continues, the state a command keeps in it, saving;
//   - evalcache.go: the held-out accuracy before training, cached per initial model and settings;
//   - completions.go: the sampled completions a run logs beside its metrics.
package rlrun
