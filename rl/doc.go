// Package rl fine-tunes language models with reinforcement learning (GRPO, PPO) and supervised
// warm-up (SFT): GRPOTrainer, PPOTrainer and SFTTrainer over a Policy (GPT2 or Llama, full or
// LoRA), with Run for a whole run, Checkpoint/Save/Restore for bit-identical resume, and
// SetComm to spread any of them over MPI ranks (spread.go). Rewards are what a trainer's user
// implements (reward.go; verifiers in rl/reward).
//
// The losses, masks, log-probs and KL math the trainers call live in rl/objective. Prompts and
// datasets come from rl/tasks; the README explains the commands and the resume rules, and
// GRPOTrainer's and Rollout's documentation the loop and the replayed truncation.
package rl
