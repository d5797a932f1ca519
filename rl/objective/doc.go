// Package objective is the float64 math of RL fine-tuning, on the host and standard library
// only: masks built by position (mask.go), sampled-token log-probs and the sampler's truncation
// (logprob.go), KL estimators (kl.go), the GRPO and PPO losses with their exact per-token
// gradients (grpo.go, ppo.go: GRPOLoss and PPOLoss state the formulas), GAE, GAE over the
// trained tokens of multi-turn episodes (gae_turns.go), KL controllers and statistics.
// oracle_test.go checks it against fixtures that follow TRL, and testdata holds cases this
// project made from its own references. Package rl drives a model through it.
package objective
