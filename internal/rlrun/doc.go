// Package rlrun holds the run machinery of vkgrad's fine-tuning commands (sft, grpo, ppo).
//
// The commands parse their flags in package main; what they share beyond the flags lives here,
// one idea to a file:
//   - family.go: the tokenizer side of a model (tokenizer, EOS, chat template);
//   - resume.go: the checkpoint --resume continues, and the state a command keeps in it;
//   - evalcache.go: the held-out accuracy before training, cached per initial model and settings;
//   - completions.go: the sampled completions a run logs beside its metrics.
package rlrun
