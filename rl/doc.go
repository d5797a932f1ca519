// Package rl holds the host-side mathematics of reinforcement-learning fine-tuning: masks,
// sampled-token log-probs, KL estimators, GRPO and PPO losses with their exact gradients,
// GAE, KL controllers, per-step diagnostics, and rewards. The model runs on a tensor backend
// and produces per-token log-probs (and values for PPO); the trainer copies those small
// rows x tokens arrays to the host, this package computes advantages, the loss, d loss / d
// log-prob (and d loss / d value) per token in float64, and the trainer back-propagates them
// through the model. Everything here is deterministic and checked against oracles computed
// with PyTorch autograd following Hugging Face TRL (see oracle_test.go).
//
// # Masks
//
// Completions are right-padded rows. The response mask is 1 from the first completion token
// up to and including the first EOS (or to the generated length), and the loss mask is the
// response mask minus forced tokens (tokens a template or schema dictated: they carry no
// learning signal, E[g] = 0, but add variance). Masks are built by position, never by token
// value: GPT-2's EOS and PAD share id 50256, so masking by value either drops the EOS the
// policy chose to emit or keeps padding in the loss.
//
// # GRPO
//
// Advantages are per group of completions of one prompt, A = (r - mean_group) / (std + 1e-4)
// with Bessel-corrected std of the group, of the batch, or no division (scale_rewards). Per
// token, ratio = exp(logp - old_logp) and
//
//	l_t = -min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A) + beta*KL_t - entropy_coef*H_t
//
// where KL_t is k1, k2 or k3 (k3 = exp(ref-logp) - (ref-logp) - 1, TRL's choice). Losses are
// aggregated over the loss mask: grpo = mean over rows of the row mean, bnpo/dapo = sum over
// tokens / number of tokens, dr_grpo = sum / (rows * max_completion_length). The gradient
// d loss / d logp_t is exact: -A*ratio*w_t where the unclipped branch is the minimum, 0 where
// the clip holds, plus beta*dKL/dlogp*w_t, with w_t the aggregation weight.
//
// Log-probs must be computed at the sampling temperature and under the sampler's top-k/top-p
// truncation or the first-iteration ratio is not 1 and the objective optimises a distribution
// other than the one sampled; SampleToken draws from exactly the distribution
// ComputeTokenLogProbs evaluates, so a sampler built on it cannot drift from the loss (see
// Replaying the truncation). A per-token ratio bound drops tokens whose ratio is implausible
// (misaligned or stale tokens) and counts them; a step with too few learnable tokens, or too
// small a learnable fraction, is skipped with a reason; a KL hard cap skips the step or stops
// training.
//
// # PPO
//
// Per-token rewards are -kl_coef*KL_t (old vs reference, k1 or k3) on response tokens, plus
// the score (minus missing_eos_penalty for rows without an EOS) at the last response token.
// GAE(gamma, lambda) runs over the response mask with terminal value 0; returns are advantages
// plus old values; advantages are optionally whitened over the response mask. The policy loss
// is the clipped surrogate averaged over the loss mask, the value loss half the clipped squared
// error averaged over the response mask, and loss = pg + vf_coef*vf. The KL coefficient comes
// from a fixed or an adaptive (Ziegler et al.) controller.
//
// # Diagnostics
//
// Each step reports what makes the failure modes visible: the gap between the sampler's
// log-probs (of the truncated distribution it drew from) and the training ones
// (logp_mismatch), reward mean/std and the fraction of groups with zero reward spread (no
// signal), clip ratios (low, high, region), active and clipped fractions, mean ratio by
// advantage sign and ratio quantiles (a mean ratio far from 1 at the first iteration means
// misaligned tokens or a temperature mismatch), KL (k1/k2/k3) and the KL share of the loss,
// advantage spread, learnable-token fraction, completion lengths, value loss and explained
// variance.
//
// # Replaying the truncation
//
// Top-k and top-p both keep the tokens tied with the last one they keep, so the set a token
// was drawn from is always {v : logit_v >= c} for one raw logit c (before the temperature).
// The rollout records c per sampled token (Rollout.Cutoff: the midpoint between the smallest
// kept and the largest dropped logit, so a full forward pass that rounds differently from the
// KV-cache decoder still selects the same set; -Inf where nothing was dropped). With
// TrainConfig.ReplayTruncation (on by default; --replay-truncation) the loss's log-probs come
// from the backend's LogSoftmaxGather with those cutoffs: softmax(logits/T) over the kept set
// (and the sampled token, which is always kept), renormalised, with probability, entropy term
// and gradient exactly 0 outside it. Policy, old and reference log-probs all use the
// rollout's cutoffs, so the training log-probs equal the sampler's truncated ones to float32
// rounding, the first ratio is exactly 1 and the step-zero KL exactly 0. The KL is then
// between the truncated policy and the reference truncated to the same sets, and the entropy
// (reported, and in the entropy bonus) is the truncated distribution's. With replay off the
// loss sees the full distribution, an off-policy bias shown by a note at the start and by
// logp_mismatch (about minus the log of the kept mass).
//
// # Trainers
//
// GRPOTrainer and PPOTrainer run the whole loop on a gpt2.Model (see Example): prompts from a
// PromptSource (rl/tasks adapts the built-in tasks), rollouts with the KV-cache decoder (rows
// grouped by prompt length; temperature, top-k, top-p; stop at EOS or MaxNewTokens; sampling
// log-probs recorded), rewards, masks by position, then a forward pass over prompt+completion
// rows (right-padded) whose lm head runs only at completion positions (gpt2.SelectedHead),
// log-probs at the sampling temperature (under the replayed truncation), the host-side loss of
// this package, its per-token gradients uploaded into the log-prob (and entropy, value)
// gradients, the tape's backward and AdamW with clipping. The old log-probs are the policy's before the first of Mu updates, so the
// first ratio is exactly 1; a frozen Reference model gives exactly the policy's log-probs until
// the first update (KL exactly 0) and is re-synced every N steps or blended (EMA). Each step
// returns a StepReport with every diagnostic under its JSON name (WriteMetrics logs it as one
// JSON line), warnings (active fraction < 0.5, token alignment < 0.99, KL past the cap), and
// the skip/stop action. On the CPU a fixed seed gives identical metrics run after run.
// SFTTrainer is the supervised warm-up on prompt/answer pairs (loss on the answer tokens), and
// Evaluate measures greedy and sampled held-out accuracy.
//
// # Checkpoints and resuming
//
// GRPOTrainer, PPOTrainer and SFTTrainer each have Checkpoint (the whole state as a
// checkpoint.State), Save (Checkpoint written atomically by nn/checkpoint) and Restore. A
// checkpoint holds everything that carries over from one step to the next: the policy's
// parameters and AdamW moments and step; the reference model's parameters (ReferenceExtra:
// syncs and EMA blends move it away from the initial model) and sync count; the sampling RNG
// (the value head's dropout masks are keyed by the seed and the step); the step, and with it the
// learning-rate schedule; the prompt stream's position (MetaState: a StatefulSource's own state,
// else the number of prompts drawn, replayed on restore); GRPO's stop reason; and for PPO the
// value head's parameters and its own AdamW moments and step and the KL controller's
// coefficient. The trainer's config is stored under MetaConfig and the kind under MetaTrainer.
// Restore takes a trainer built afresh with the same model shape, config and prompt source, and
// checks before changing anything: a different model shape or config field (only the number of
// steps may change), another kind of trainer, a missing reference or optimizer state are refused
// with the file and the field named. The restored trainer then takes exactly the steps an
// uninterrupted one would: on the CPU every metric and parameter is bitwise identical. The
// built-in task sources (rl/tasks) save their position; `vkgrad sft|grpo|ppo` checkpoint every
// --save-every steps, at --stop-at and on Ctrl-C or SIGTERM, and continue with --resume.
//
// Rewards never fail silently: a reward function that errors makes the step fail with the
// reward's name, instead of a dummy score that would inject a fake learning signal. A reward
// sees the decoded completion followed by EOSText when the row ended with an EOS
// (CompletionText), so "answered and stopped" differs from "cut off by the length limit".
// Prompt sources and built-in tasks are in the tasks sub-package.
package rl
