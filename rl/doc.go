// Package rl fine-tunes language models with reinforcement learning (GRPO, PPO) and supervised
// warm-up (SFT). It holds two things:
//
//   - The objective math, on the host in float64 and checked against TRL-following oracles
//     (oracle_test.go): masks built by position (mask.go), sampled-token log-probs and the
//     sampler's truncation (logprob.go), KL estimators (kl.go), GRPO and PPO losses with their
//     exact per-token gradients (grpo.go, ppo.go: GRPOLoss and PPOLoss document the formulas),
//     GAE and KL controllers, statistics and rewards (reward.go; verifiers in rl/reward).
//   - The trainers that drive a model through it: GRPOTrainer, PPOTrainer and SFTTrainer over a
//     Policy (GPT2 or Llama, full or LoRA), with Run for a whole run, Checkpoint/Save/Restore for
//     bit-identical resume, and SetComm for SFT across MPI ranks.
//
// Prompts and datasets come from rl/tasks; the README explains the commands and the resume
// rules, and GRPOTrainer's and Rollout's documentation the loop and the replayed truncation.
package rl
