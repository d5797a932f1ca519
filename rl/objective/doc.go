// Package objective is the float64 math of RL fine-tuning: masks, log-probs, KL and the losses.
//
// It runs on the host and imports the standard library only; package rl drives a model
// through it.
//
// # Masks and log-probs
//
// [BuildMasks] builds the [Masks] of a batch of completions by position: which tokens are
// the response and which carry a learning signal, leaving out tokens a [Forced] rule marks.
// [ComputeTokenLogProbs] and [SampleToken] give a sampled token's log-probabilities under the
// full distribution and under the sampler's truncation ([Sampling], [KeptSet]).
//
// # Losses
//
// [GRPOLoss] and [PPOLoss] compute the GRPO and PPO losses with their exact per-token
// gradients; their documentation states the formulas. The KL to the reference is estimated per
// token as a [KLEstimator] says, and for PPO's reward penalty a [KLController] ([FixedKL],
// [AdaptiveKL]) sets its coefficient.
//
// # Advantages and statistics
//
// [GroupAdvantages] centres rewards on their GRPO group's mean and scales them as
// [ScaleRewards] says; [GAE] computes generalised advantage estimates, and [GAEOverTurns] the
// same over the trained tokens of multi-turn episodes.
// [Whiten], [MeanStd], [Quantile] and [EntropyFromLogProbs] are the statistics the trainers
// report and use.
package objective
