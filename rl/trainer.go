package rl

import (
	"fmt"
	"math"
	"time"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/gradsum"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/optim"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// TrainConfig holds the options the GRPO and PPO trainers share. Each field becomes a
// command-line flag.
type TrainConfig struct {
	// Steps is the number of RL steps (rollout + updates) of a run; >= 1.
	Steps int `json:"steps"`
	// PromptsPerStep is the number of distinct prompts sampled per step; >= 1.
	PromptsPerStep int `json:"prompts_per_step"`
	// Rollout says how completions are sampled; its temperature is also the loss's.
	Rollout RolloutConfig `json:"rollout"`
	// ReplayTruncation makes the loss's log-probs (policy, old and reference alike) those of
	// the top-k/top-p truncated, renormalised distribution each token was sampled from, so
	// sampling-time and training-time log-probs agree to rounding and the objective is
	// on-policy; the entropy (reported and in the entropy bonus) is then the truncated
	// distribution's. Off, the loss uses the full distribution at the temperature (an
	// off-policy bias, noted at the start). No effect without top-k or top-p.
	ReplayTruncation bool `json:"replay_truncation"`
	// Mu is the number of optimizer updates per rollout batch (GRPO's mu, PPO's epochs); >= 1.
	// Old log-probs are those of the policy before the first update, so its ratio is exactly 1.
	Mu int `json:"mu"`
	// Settings are the learning rate, its schedule, weight decay and clipping.
	optim.Settings
	// RefSyncEvery moves the reference model toward the policy every this many steps; 0 never.
	RefSyncEvery int `json:"ref_sync_every"`
	// RefMixAlpha is the blend of a sync: ref = alpha*policy + (1-alpha)*ref; 1 copies (an EMA
	// of the policy is RefSyncEvery 1 with a small alpha). In (0, 1].
	RefMixAlpha float64 `json:"ref_mix_alpha"`
	// MicroBatch caps the rows of one forward pass; 0 runs the whole batch at once and
	// MicroBatchAuto takes what AutoMicroBatch allows for each batch. With
	// several micro-batches the log-probs are computed first without a tape, the loss on the
	// whole batch, then each micro-batch is recomputed with the tape and back-propagated.
	MicroBatch int `json:"micro_batch"`
	// Seed fixes the sampling (and the value head's dropout); prompts come from their source.
	Seed uint64 `json:"seed"`
	// KLMetrics keeps a reference model for the KL diagnostics even when no loss term uses it.
	KLMetrics bool `json:"kl_metrics"`
	// Episodes, when set, makes each rollout row a multi-turn episode in the environment the
	// trainer is given (SetEnvironment): the rollout's sampling, its EOS (the end-of-turn
	// token) and its max_new_tokens (per turn) apply to every turn.
	Episodes *episode.Limits `json:"episodes,omitempty"`
	// MaskToolSyntax leaves the fixed parts of the episodes' tool calls (tags, JSON
	// punctuation, the envelope's keys) out of the loss: only the choice of tool and the
	// arguments train.
	MaskToolSyntax bool `json:"mask_tool_syntax,omitempty"`
	// Spread computes each step in pieces that any number of ranks can share (see
	// GRPOTrainer.SetComm, which sets it): each group sampled from its own stream and scored
	// where it was sampled, micro-batch gradients added in order on the host. A run then gives the same numbers on any number
	// of ranks, and resumes on another.
	Spread bool `json:"spread,omitempty"`
}

// MicroBatchAuto is the MicroBatch that sizes each batch's forward passes to a fraction of
// the training state (AutoMicroBatch).
const MicroBatchAuto = -1

// DefaultTrainConfig is a setting for small models on the built-in tasks.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{
		Steps: 100, PromptsPerStep: 16, Mu: 1, Settings: optim.Settings{LR: 1e-4, MinLR: 1e-4, MaxGradNorm: 1},
		Rollout:     RolloutConfig{Sampling: Sampling{Temperature: 1, TopP: 1}, MaxNewTokens: 16, EOS: 50256},
		RefMixAlpha: 1, Seed: 1, KLMetrics: true, ReplayTruncation: true,
	}
}

// Validate names the first bad field.
func (c TrainConfig) Validate() error {
	if c.Steps < 1 {
		return fmt.Errorf("steps %d: want >= 1", c.Steps)
	}
	if c.PromptsPerStep < 1 {
		return fmt.Errorf("prompts_per_step %d: want >= 1", c.PromptsPerStep)
	}
	if err := c.Rollout.Validate(); err != nil {
		return err
	}
	if c.Mu < 1 {
		return fmt.Errorf("mu %d: want >= 1", c.Mu)
	}
	if err := c.Settings.Validate(c.Steps); err != nil {
		return err
	}
	if c.RefSyncEvery < 0 {
		return fmt.Errorf("ref_sync_every %d: want >= 0 (0: never)", c.RefSyncEvery)
	}
	if !(c.RefMixAlpha > 0 && c.RefMixAlpha <= 1) {
		return fmt.Errorf("ref_mix_alpha %v: want a value in (0, 1]", c.RefMixAlpha)
	}
	if c.MicroBatch < MicroBatchAuto {
		return fmt.Errorf("micro_batch %d: want >= 0 (0: whole batch) or %d (auto)", c.MicroBatch, MicroBatchAuto)
	}
	if c.Episodes != nil {
		if err := c.Episodes.Validate(); err != nil {
			return fmt.Errorf("episodes: %w", err)
		}
	} else if c.MaskToolSyntax {
		return fmt.Errorf("mask_tool_syntax: tool calls come from episodes; set episodes too")
	}
	return nil
}

// maxCompletion is the most completion tokens a row can have: a turn's cap, or with episodes
// the whole context's.
func (c TrainConfig) maxCompletion() int {
	if c.Episodes != nil {
		return c.Episodes.MaxEpisodeTokens
	}
	return c.Rollout.MaxNewTokens
}

// episodeConfig is how a step's episodes run: the rollout's sampling, EOS and per-turn cap
// within cfg.Episodes' limits.
func (c TrainConfig) episodeConfig(greedy bool) episode.Config {
	ec := episode.Config{Sampling: c.Rollout.Sampling, EndOfTurn: int32(c.Rollout.EOS), MaxNewTokens: c.Rollout.MaxNewTokens, Limits: *c.Episodes}
	if greedy {
		ec.Sampling = sample.Options{}
	}
	return ec
}

func (c TrainConfig) schedule() optim.Cosine { return c.Schedule(c.Steps) }

// StepReport is what one RL step did. Metrics holds every diagnostic under its JSON name
// (deterministic for a seed on the CPU); timings are kept apart.
type StepReport struct {
	Step    int
	Metrics map[string]float64
	// Action is Proceed when every update was applied, else the first Skip or Stop, with Reason.
	Action   Action
	Reason   string
	Warnings []string
	// Seconds is the step's wall time, RolloutSeconds the sampling part of it.
	Seconds, RolloutSeconds float64
	// EnvSeconds is the time the episodes' environment calls took, summed over the calls;
	// EnvWaitSeconds the part of it the decoder waited for.
	EnvSeconds, EnvWaitSeconds float64
	// Completions are the step's sampled completions with their rewards, in rollout order.
	Completions []Completion
}

// Completion is one sampled completion and how it was scored.
type Completion struct {
	Prompt     string             `json:"prompt"`
	Completion string             `json:"completion"`
	Reward     float64            `json:"reward"`
	Rewards    map[string]float64 `json:"rewards"` // each term's unweighted score
	// Turns are a multi-turn episode's turns and replies, in order; StopReason why it ended.
	Turns      []CompletionTurn `json:"turns,omitempty"`
	StopReason string           `json:"stop_reason,omitempty"`
}

// CompletionTurn is an assistant turn or an environment reply of an episode.
type CompletionTurn struct {
	Role    string  `json:"role"` // "assistant" or "environment"
	Text    string  `json:"text"`
	Tokens  []int32 `json:"tokens"`
	Trained bool    `json:"trained"`
}

// completionsOf pairs a rollout's prompts and texts with their rewards.
func (c *rolloutTrainer) completionsOf(ro *Rollout, rb *RewardBatch) []Completion {
	out := make([]Completion, len(ro.Texts))
	for i := range out {
		terms := make(map[string]float64, len(rb.PerReward))
		for k, v := range rb.PerReward {
			terms[k] = v[i]
		}
		out[i] = Completion{Prompt: ro.Prompts[i].Text, Completion: ro.Texts[i], Reward: rb.Total[i], Rewards: terms}
		if ro.Episodes != nil {
			out[i].Turns = episodeTurns(ro.Episodes[i], c.env.Tok.Decode)
			out[i].StopReason = ro.Episodes[i].StopReason
		}
	}
	return out
}

// rolloutTrainer is what the GRPO and PPO trainers, which learn from the policy's own
// rollouts, share: the policy, its optimizer, the reference, prompts, rewards and the
// sampling RNG.
type rolloutTrainer struct {
	cfg     TrainConfig
	policy  nn.LM
	pol     *model // the policy with its selected-position head
	refm    *model
	ref     *Reference
	opt     *optim.AdamW
	tok     Tokenizer
	prompts *countedSource
	reward  *Combined
	rng     *rng.RNG
	tape    *autograd.Tape
	sched   optim.Cosine
	step    int
	stopped string
	notes   []string
	// numTokens counts the prompt and completion tokens of every rollout so far (TRL's
	// num_tokens).
	numTokens int64
	valueLR   float64 // the value head's learning rate; 0 follows the schedule

	// comm are the ranks a spread step (cfg.Spread, see GRPOTrainer.SetComm) is split over;
	// nil: the same arithmetic in one process.
	comm  *mpi.Comm
	accs  map[[2]int]*gradsum.Accumulator // by (values, micro-batches)
	comms mpi.ReduceStats                 // this step's traffic so far

	timer PhaseTimer // told each phase's time (SetPhaseTimer); nil: none

	env *Environment // the episodes' environment (SetEnvironment); nil: single completions

	scaler *train.LossScaler // fp16's dynamic loss scale (SetLossScaler); nil: none
}

// SetLossScaler scales the loss dynamically (fp16 products, see train.LossScaler); nil turns
// it off. Its scale must be a power of two; a checkpoint keeps its state.
func (c *rolloutTrainer) SetLossScaler(s *train.LossScaler) { c.scaler = s }

func newRolloutTrainer(policy nn.LM, tok Tokenizer, prompts PromptSource, reward *Combined, cfg TrainConfig, needRef bool) (*rolloutTrainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case policy == nil:
		return nil, fmt.Errorf("trainer: no policy model")
	case tok == nil:
		return nil, fmt.Errorf("trainer: no tokenizer")
	case prompts == nil:
		return nil, fmt.Errorf("trainer: no prompt source")
	case reward == nil:
		return nil, fmt.Errorf("trainer: no reward")
	}
	if err := validate(policy); err != nil {
		return nil, err
	}
	if cfg.Rollout.EOS >= policy.VocabSize() {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.Rollout.EOS, policy.VocabSize())
	}
	c := &rolloutTrainer{cfg: cfg, policy: policy, pol: newModel(policy), tok: tok, prompts: &countedSource{src: prompts}, reward: reward, rng: rng.New(cfg.Seed),
		tape: autograd.NewTape(), sched: cfg.schedule()}
	var err error
	if needRef {
		if c.ref, err = NewReference(policy); err != nil {
			return nil, err
		}
		c.refm = newModel(c.ref.Model)
		if c.ref.Shared && cfg.RefSyncEvery > 0 {
			return nil, fmt.Errorf("ref_sync_every %d: the reference of a LoRA policy is its base model, which cannot be synced (use 0)", cfg.RefSyncEvery)
		}
	}
	if err := enableGrads(policy); err != nil {
		return nil, err
	}
	if c.opt, err = optim.NewAdamW(policy.Params(), cfg.AdamW()); err != nil {
		return nil, err
	}
	if s := cfg.Rollout.Sampling; s.Truncates() && !cfg.ReplayTruncation {
		c.notes = append(c.notes, fmt.Sprintf("sampling truncates (top_k %d, top_p %v) but the loss's log-probs use the full distribution at the temperature (replay_truncation is off): an off-policy bias", s.TopK, s.TopP))
	}
	return c, nil
}

// drawRollout samples prompts (each repeated per times), completions and rewards.
func (c *rolloutTrainer) drawRollout(per int) (*Rollout, *RewardBatch, error) {
	rows, err := c.drawPrompts(per)
	if err != nil {
		return nil, nil, err
	}
	c.releaseActivations()
	if c.env != nil {
		return c.drawEpisodes(rows, per)
	}
	if c.cfg.Episodes != nil {
		return nil, nil, fmt.Errorf("the config asks for episodes, but the trainer has no environment (SetEnvironment)")
	}
	ro, err := c.sample(rows, per)
	if err != nil {
		return nil, nil, fmt.Errorf("rollout: %w", err)
	}
	metas := make([]Meta, len(rows))
	for i, p := range rows {
		metas[i] = p.Meta
	}
	rb, err := c.score(ro, metas, per)
	if err != nil {
		return nil, nil, err
	}
	for i := range ro.PromptIDs {
		c.numTokens += int64(len(ro.PromptIDs[i]) + ro.GenLens[i])
	}
	return ro, rb, nil
}

// drawPrompts draws the step's PromptsPerStep prompts, each repeated per times: the rows of
// its groups.
func (c *rolloutTrainer) drawPrompts(per int) ([]Prompt, error) {
	rows := make([]Prompt, 0, c.cfg.PromptsPerStep*per)
	for range c.cfg.PromptsPerStep {
		p, err := c.prompts.Next()
		if err != nil {
			return nil, fmt.Errorf("prompts: %w", err)
		}
		for range per {
			rows = append(rows, p)
		}
	}
	return rows, nil
}

// sample generates the completions of rows (groups of per), spread over the ranks when the
// step is, timed as the rollout phase; the decoder's freed memory then goes back to the OS.
func (c *rolloutTrainer) sample(rows []Prompt, per int) (*Rollout, error) {
	defer returnFreed()
	defer c.timed(PhaseRollout)()
	if c.cfg.Spread {
		return c.generateSpread(rows, per)
	}
	return Generate(c.policy, c.tok, rows, c.cfg.Rollout, c.rng)
}

// score scores a rollout's texts (groups of per rows) with metas, spread over the ranks when
// the step is.
func (c *rolloutTrainer) score(ro *Rollout, metas []Meta, per int) (*RewardBatch, error) {
	texts := make([]string, len(ro.Prompts))
	for i, p := range ro.Prompts {
		texts[i] = p.Text
	}
	defer c.timed(PhaseReward)()
	if c.cfg.Spread {
		return c.scoreSpread(texts, ro.Texts, metas, per)
	}
	return c.reward.ScoreBatch(texts, ro.Texts, metas)
}

// replays reports whether the loss's log-probs replay the sampler's truncation.
func (c *rolloutTrainer) replays() bool {
	return c.cfg.ReplayTruncation && c.cfg.Rollout.Sampling.Truncates()
}

// batchFor lays a rollout out for the forward passes (with the sampler's cutoffs when the
// truncation is replayed) and checks token alignment.
func (c *rolloutTrainer) batchFor(ro *Rollout, m map[string]float64) (*seqBatch, float64, error) {
	sb, err := c.rowsBatch(ro, nil)
	if err != nil {
		return nil, 0, err
	}
	if err := c.reserveActivations(sb); err != nil {
		return nil, 0, err
	}
	align, err := objective.TokenAlignment(ro.Completions, sb.trainTokens(c.cfg.Rollout.EOS), ro.Masks.Response)
	if err != nil {
		return nil, 0, err
	}
	m["token_alignment"] = align
	for k, v := range ro.Masks.Stats().Map() {
		m[k] = v
	}
	episodeMetrics(m, ro)
	return sb, align, nil
}

// rowsBatch lays out the rollout rows listed in rows (nil: every row, in order) as a batch of
// their own, with the sampler's cutoffs when the truncation is replayed.
func (c *rolloutTrainer) rowsBatch(ro *Rollout, rows []int) (*seqBatch, error) {
	prompts, comps, lens := ro.PromptIDs, ro.Completions, ro.GenLens
	var cut [][]float32
	if c.replays() {
		cut = ro.Cutoff
	}
	if rows != nil {
		prompts, comps, lens = make([][]int32, len(rows)), make([][]int, len(rows)), make([]int, len(rows))
		var sub [][]float32
		if cut != nil {
			sub = make([][]float32, len(rows))
		}
		for k, i := range rows {
			prompts[k], comps[k], lens[k] = ro.PromptIDs[i], ro.Completions[i], ro.GenLens[i]
			if sub != nil {
				sub[k] = cut[i]
			}
		}
		cut = sub
	}
	micro, err := c.passRows(prompts, lens)
	if err != nil {
		return nil, err
	}
	return newSeqBatch(prompts, comps, lens, cut, int32(c.cfg.Rollout.EOS), micro, c.policy.MaxSeqLen())
}

// passRows is the rows of one forward pass over these rows: MicroBatch, or with
// MicroBatchAuto what AutoMicroBatch allows at their longest prompt and completion.
func (c *rolloutTrainer) passRows(prompts [][]int32, lens []int) (int, error) {
	if c.cfg.MicroBatch != MicroBatchAuto {
		return c.cfg.MicroBatch, nil
	}
	longest, newTok := 1, 1
	for i, p := range prompts {
		longest, newTok = max(longest, len(p)+lens[i]), max(newTok, lens[i])
	}
	cfg := c.cfg
	cfg.Rollout.MaxNewTokens = newTok
	n, err := AutoMicroBatch(c.policy, cfg, len(prompts), max(1, longest-newTok), c.refm != nil)
	if err != nil {
		return 0, fmt.Errorf("micro_batch auto: %w", err)
	}
	return n, nil
}

// attachMetrics puts a finished step's metrics, its number among them, into rep, with the
// warnings they raise.
func (c *rolloutTrainer) attachMetrics(rep *StepReport, m map[string]float64) {
	m["step"] = float64(c.step)
	rep.Metrics = m
	rep.Warnings = append(rep.Warnings, warnings(m)...)
}

// finishStep syncs the reference when due and advances the step counter.
func (c *rolloutTrainer) finishStep(m map[string]float64) error {
	c.step++
	if c.ref != nil && c.cfg.RefSyncEvery > 0 && c.step%c.cfg.RefSyncEvery == 0 {
		if err := c.ref.Sync(c.policy, c.cfg.RefMixAlpha); err != nil {
			return err
		}
	}
	if c.ref != nil {
		m["ref_syncs"] = float64(c.ref.Syncs)
	}
	m["num_tokens"] = float64(c.numTokens)
	c.commMetrics(m)
	if s, ok := c.prompts.src.(SizedSource); ok && s.Len() > 0 {
		m["epoch"] = float64(c.prompts.drawn) / float64(s.Len()) // TRL's epoch: passes over a dataset
	}
	return nil
}

// sampleMismatch adds the gap between the log-probs of the distribution the tokens were
// sampled from (truncated by top-k/top-p when the sampler truncates) and the training-time
// log-probs: float32 rounding when the loss sees the sampler's distribution, the log of the
// kept mass when a truncation is not replayed.
func sampleMismatch(m map[string]float64, ro *Rollout, trainLogp [][]float64) {
	m["logp_mismatch_mean"], m["logp_mismatch_max"] = LogpMismatch(ro.SampleTrunc, trainLogp, ro.Masks.Response)
}

// warnings lists the signs of a broken run that the log flags: most tokens clipped, trained tokens
// that were not the sampled ones, sampling and training log-probs apart.
func warnings(m map[string]float64) []string {
	var w []string
	if v, ok := m["active_fraction"]; ok && m["learnable_tokens"] > 0 && v < 0.5 {
		w = append(w, fmt.Sprintf("active fraction %.3f < 0.5: most tokens sit outside the clip range (too large a step, or stale/misaligned log-probs)", v))
	}
	if v, ok := m["token_alignment"]; ok && v < 0.99 {
		w = append(w, fmt.Sprintf("token alignment %.4f < 0.99: the tokens trained on are not the tokens sampled", v))
	}
	if v := m["logp_mismatch_max"]; v > 1e-2 {
		w = append(w, fmt.Sprintf("sampling and training log-probs differ by up to %.3g", v))
	}
	return w
}

// rewardByTask adds the mean total reward of the rows of each task (meta["task"]) as
// "task_reward/<task>" when the batch mixes several tasks.
func rewardByTask(m map[string]float64, ro *Rollout, total []float64) {
	sum, n := map[string]float64{}, map[string]int{}
	for i, p := range ro.Prompts {
		sum[p.Meta["task"]] += total[i]
		n[p.Meta["task"]]++
	}
	if len(n) < 2 {
		return
	}
	for k, c := range n {
		m["task_reward/"+k] = sum[k] / float64(c)
	}
}

// addRewardTerms records each reward term's mean and standard deviation under TRL's names,
// rewards/<name>/mean and rewards/<name>/std.
func addRewardTerms(dst map[string]float64, rb *RewardBatch) {
	for k, v := range rb.Means {
		dst["rewards/"+k+"/mean"] = v
	}
	for k, v := range rb.Stds {
		dst["rewards/"+k+"/std"] = v
	}
}

// meanInto accumulates src into sum for averaging over inner iterations.
func meanInto(sum map[string]float64, src map[string]float64) {
	for k, v := range src {
		sum[k] += v
	}
}

func finite(m map[string]float64) error {
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metric %s is %v (diverged: lower the learning rate)", k, v)
		}
	}
	return nil
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
