// Package rl fine-tunes language models with reinforcement learning (GRPO, PPO) and with SFT.
//
// # Trainers
//
// [GRPOTrainer], [PPOTrainer] and [SFTTrainer] train a policy, the [nn.LM] of a GPT-2
// ([nn.GPT2]) or a Llama-family model ([nn.Llama]), all of its weights or LoRA adapters only;
// its parameters are one flat buffer, so the optimizer is one fused pass.
// The RL trainers sample completions of prompts from a [PromptSource] ([Generate] returns them
// as a [Rollout]), score them with a [Combined] reward and update the policy, which a KL
// penalty can keep near a frozen [Reference]; PPO adds a [ValueHead]. Given an [Environment] (SetEnvironment), they
// sample multi-turn episodes instead ([env], [episode]). [Evaluate] scores a policy on
// held-out prompts.
//
// Each trainer's Run drives a whole run; Checkpoint, Save and Restore resume it bit for bit,
// and SetComm spreads it over MPI ranks ([mpi.Comm]).
//
// # Rewards
//
// A [Reward] scores one completion, a [BatchReward] a whole batch; [NewCombined] sums weighted
// rewards; [RewardFunc] makes one of a function, and [EnvReward] is an episode's return. The
// verifiers a run names (exact, numeric, regex, format, length) and an external reward program
// are rl/reward's.
//
// # Related packages
//
// The losses, masks, log-probs and KL math the trainers call live in [objective], and prompts
// and datasets come from rl/tasks.
package rl
