// Package rlrun holds the machinery of vkgrad's fine-tuning commands (sft, grpo, ppo).
//
// The commands parse their flags in package main; what they share beyond the flags lives here,
// one idea to a file:
//   - evalcache.go: the held-out accuracy before training, cached per initial model and settings;
//   - completions.go: the sampled completions a run logs beside its metrics;
//   - runstate.go: what a command keeps in its checkpoint beside the trainer's state.
package rlrun
