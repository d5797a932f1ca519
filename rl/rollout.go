package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// Tokenizer turns text into token ids and back; nn/gpt2/tokenizer's GPT-2 tokenizer satisfies it.
type Tokenizer interface {
	Encode(text string) []int32
	Decode(ids []int32) (string, error)
}

// SizedSource is a PromptSource over a fixed set of prompts (a dataset), whose size lets the
// trainers report epochs; Len 0 means endless.
type SizedSource interface {
	PromptSource
	Len() int
}

// Prompt is one problem given to the trainer.
type Prompt struct {
	Text string
	// Answer is the reference completion (without the EOS), used by supervised training.
	Answer string
	// Meta is passed to the reward (reference answer, task name, ...).
	Meta Meta
	// Template is the forced-token template of the completion: the token id each position
	// must hold by the task's format, or Unforced (see [objective.ForcedTemplate]); nil when nothing is forced.
	Template []int
	// Messages are the prompt as a conversation when it came as one (a chat dataset's turns
	// before the completion); Text is their rendering. An episode renders them again with
	// the environment's opening messages and tools.
	Messages []env.Message
	// Conversation is a chat dataset row's whole conversation, its final assistant turn (the
	// answer) included, for supervised training on every assistant turn; nil otherwise.
	Conversation []env.Message
	// Tools are the function specs (OpenAI style) the dataset row offers; nil: none.
	Tools []json.RawMessage
	// Example is the dataset row as a JSON object, what an environment is reset from; nil
	// for a generated prompt.
	Example json.RawMessage
}

// PromptSource yields prompts one at a time.
type PromptSource interface {
	Next() (Prompt, error)
}

// PromptFunc adapts a function to PromptSource.
type PromptFunc func() (Prompt, error)

// Next calls f.
func (f PromptFunc) Next() (Prompt, error) { return f() }

// RolloutConfig says how completions are sampled.
type RolloutConfig struct {
	// Sampling is how the rollouts draw tokens; the loss scores them at the same temperature
	// (and, with TrainConfig.ReplayTruncation, truncation).
	Sampling sample.Options `json:"sampling"`
	// MaxNewTokens caps the completion length (EOS included); >= 1.
	MaxNewTokens int `json:"max_new_tokens"`
	// EOS ends a completion; GPT-2's is 50256.
	EOS int `json:"eos"`
	// GenBatch is the number of rows decoded together (the decoder's slots): a row that ends
	// gives its slot to the next waiting row; 0: a slot for every row.
	GenBatch int `json:"gen_batch"`
}

// Validate names the first bad field.
func (c RolloutConfig) Validate() error {
	// Stricter than the sampler's own check: a rollout samples (the loss divides by a
	// temperature > 0), and top_p must say 1, not 0, to keep every token.
	if err := objective.Sampling(c.Sampling).Validate(); err != nil {
		return err
	}
	if c.MaxNewTokens < 1 {
		return fmt.Errorf("max_new_tokens %d: want >= 1", c.MaxNewTokens)
	}
	if c.EOS < 0 {
		return fmt.Errorf("eos %d: want a token id >= 0", c.EOS)
	}
	if c.GenBatch < 0 {
		return fmt.Errorf("gen_batch %d: want >= 0 (0: no limit)", c.GenBatch)
	}
	return nil
}

// Rollout is a batch of sampled completions, rows right-padded to the longest completion.
type Rollout struct {
	Prompts     []Prompt
	PromptIDs   [][]int32
	Completions [][]int     // N x W, padded with EOS past each row's generated length
	GenLens     []int       // tokens generated per row
	SampleLogp  [][]float64 // log-prob of each token at sampling time (full distribution at the temperature)
	SampleTrunc [][]float64 // under the truncated distribution actually sampled from
	Kept        [][]int     // kept-set size at each sampled token
	// Cutoff is, at each sampled token, the raw logit (before the temperature) at or above
	// which tokens were kept: the kept set is {v : logit_v >= Cutoff}. -Inf where nothing was
	// truncated and past each row's generated length. The trainer hands it to the loss's
	// log-probs to replay the truncation (TrainConfig.ReplayTruncation).
	Cutoff [][]float32
	Masks  *objective.Masks
	// Texts are the completions as rewards see them (CompletionText): an episode's last turn.
	Texts []string
	// Episodes are the multi-turn episodes the rows come from; nil for single completions.
	Episodes     []*episode.Episode
	episodeStats episode.Stats // this rank's share of the work
}

// Rows is the number of completions.
func (r *Rollout) Rows() int { return len(r.Completions) }

// Width is the padded completion length.
func (r *Rollout) Width() int {
	if len(r.Completions) == 0 {
		return 0
	}
	return len(r.Completions[0])
}

// Generate samples one completion per prompt with m's KV-cache decoder, cfg.GenBatch rows at a
// time with continuous batching (nn/sample's GenerateBatch). Consecutive rows with the same
// prompt are a group: its prompt is prefilled once and forked. Each row draws from its own
// stream, keyed by one number drawn from r, its group and its place in the group, so a seed
// fixes the whole rollout and no row's tokens depend on the batching. Tokens are drawn (by
// nn/sample) from exactly the distribution objective.SampleToken and
// objective.ComputeTokenLogProbs describe. Masks are built by position with the prompts'
// templates.
func Generate(m nn.LM, tok Tokenizer, prompts []Prompt, cfg RolloutConfig, r *rng.RNG) (*Rollout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return generate(m, tok, prompts, cfg, false, r, nil)
}

// generate is Generate, or greedy decoding (cfg.Sampling unused, r may be nil) when greedy is
// set; finished, when set, is called with each row's index as it ends.
func generate(m nn.LM, tok Tokenizer, prompts []Prompt, cfg RolloutConfig, greedy bool, r *rng.RNG, finished func(row int)) (*Rollout, error) {
	ids, err := encodePrompts(m, tok, prompts)
	if err != nil {
		return nil, err
	}
	groups := promptGroups(ids)
	var streams []*rng.RNG
	if !greedy {
		if r == nil {
			return nil, fmt.Errorf("rollout: sampling needs a random stream")
		}
		streams = rowStreams(groups, r.Uint64())
	}
	rows, err := decodeRows(m, ids, groups, streams, cfg, greedy, finished)
	if err != nil {
		return nil, err
	}
	return assembleRollout(tok, prompts, ids, rows, cfg)
}

// encodePrompts tokenises the prompts and checks they fit the model.
func encodePrompts(m nn.LM, tok Tokenizer, prompts []Prompt) ([][]int32, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("rollout: no prompts")
	}
	maxT := m.MaxSeqLen()
	out := make([][]int32, len(prompts))
	for i, p := range prompts {
		ids := tok.Encode(p.Text)
		if len(ids) == 0 {
			return nil, fmt.Errorf("prompt %d: %q encodes to no tokens", i, p.Text)
		}
		if len(ids) >= maxT {
			return nil, fmt.Errorf("prompt %d: %d tokens leave no room in the model's context of %d", i, len(ids), maxT)
		}
		for _, id := range ids {
			if int(id) >= m.VocabSize() {
				return nil, fmt.Errorf("prompt %d: token %d outside the model's vocabulary of %d", i, id, m.VocabSize())
			}
		}
		out[i] = ids
	}
	return out, nil
}

// sampledRow is what the sampler drew for one row: its tokens and, at each, the log-probs,
// kept-set size and cutoff (see Rollout).
type sampledRow struct {
	Tokens          []int32
	LogProbs, Trunc []float32
	Kept            []int32
	Cutoff          []float32
}

// decodeRows samples a completion for each prompt with m's KV-cache decoder: cfg.GenBatch
// slots (a slot per row when 0) with continuous batching, the rows of a group (groups[i], equal
// prompts) sharing one prefill, row i drawing from streams[i] (nil when greedy); finished, when
// set, hears of each row as it ends.
func decodeRows(m nn.LM, ids [][]int32, groups []int, streams []*rng.RNG, cfg RolloutConfig, greedy bool, finished func(row int)) ([]sampledRow, error) {
	if cfg.EOS >= m.VocabSize() {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, m.VocabSize())
	}
	longest := 0
	for _, p := range ids {
		longest = max(longest, len(p))
	}
	// Room for every row's cap, min(MaxNewTokens, MaxSeqLen - its prompt).
	limit := min(m.MaxSeqLen(), longest+cfg.MaxNewTokens)
	slots := len(ids)
	if cfg.GenBatch > 0 {
		slots = min(slots, cfg.GenBatch)
	}
	dec, err := m.NewDecoder(slots, limit)
	if err != nil {
		return nil, fmt.Errorf("%w; gen_batch (--gen-batch) caps the rows decoded together", err)
	}
	defer dec.Close()
	d, ok := dec.(sample.RowDecoder)
	if !ok {
		return nil, fmt.Errorf("rollout: the policy's decoder cannot decode rows at their own positions")
	}
	reqs := make([]sample.Request, len(ids))
	for i, p := range ids {
		reqs[i] = sample.Request{Prompt: p, Group: groups[i]}
		if streams != nil {
			reqs[i].RNG = streams[i]
		}
	}
	res, _, err := sample.GenerateBatch(d, reqs, sample.BatchConfig{MaxNew: cfg.MaxNewTokens, EOS: int32(cfg.EOS), Sampling: samplerOptions(cfg.Sampling, greedy), Finished: finished})
	if err != nil {
		return nil, err
	}
	out := make([]sampledRow, len(ids))
	for i := range out {
		out[i] = sampledRow{res.Tokens[i], res.LogProbs[i], res.Trunc[i], res.Kept[i], res.Cutoff[i]}
	}
	return out, nil
}

// promptGroups numbers the runs of consecutive equal prompts (a step's prompts are each
// repeated for its group): rows of one run share a group.
func promptGroups(ids [][]int32) []int {
	groups := make([]int, len(ids))
	for i := 1; i < len(ids); i++ {
		groups[i] = groups[i-1]
		if !slices.Equal(ids[i], ids[i-1]) {
			groups[i]++
		}
	}
	return groups
}

// rowStreams gives each row the stream keyed by keys, its group and its place in the group's
// run of rows, so that its draws depend on nothing else.
func rowStreams(groups []int, keys ...uint64) []*rng.RNG {
	out := make([]*rng.RNG, len(groups))
	k := 0
	for i, g := range groups {
		if i > 0 && g != groups[i-1] {
			k = 0
		}
		out[i] = rng.Keyed(append(slices.Clip(keys), uint64(g), uint64(k))...)
		k++
	}
	return out
}

// assembleRollout pads the sampled rows into a Rollout, builds the masks by position with the
// prompts' templates, and decodes the completions' texts.
func assembleRollout(tok Tokenizer, prompts []Prompt, ids [][]int32, rows []sampledRow, cfg RolloutConfig) (*Rollout, error) {
	n := len(prompts)
	ro := &Rollout{Prompts: prompts, PromptIDs: ids, GenLens: make([]int, n)}
	W := 0
	for _, r := range rows {
		W = max(W, len(r.Tokens))
	}
	ro.Completions = make([][]int, n)
	ro.SampleLogp, ro.SampleTrunc, ro.Kept, ro.Cutoff = objective.Zeros(n, W), objective.Zeros(n, W), make([][]int, n), make([][]float32, n)
	for i, r := range rows {
		ro.GenLens[i] = len(r.Tokens)
		ro.Completions[i] = make([]int, W)
		ro.Kept[i] = make([]int, W)
		ro.Cutoff[i] = make([]float32, W)
		for j := range W {
			ro.Completions[i][j] = cfg.EOS
			ro.Cutoff[i][j] = sample.NoCutoff
			if j < len(r.Tokens) {
				ro.Completions[i][j] = int(r.Tokens[j])
				ro.SampleLogp[i][j] = float64(r.LogProbs[j])
				ro.SampleTrunc[i][j] = float64(r.Trunc[j])
				ro.Kept[i][j] = int(r.Kept[j])
				ro.Cutoff[i][j] = r.Cutoff[j]
			}
		}
	}
	var forced objective.Forced
	for _, p := range prompts {
		if p.Template != nil {
			tp := make(objective.ForcedTemplate, n)
			for i, q := range prompts {
				tp[i] = q.Template
			}
			forced = tp
			break
		}
	}
	masks, err := objective.BuildMasks(ro.Completions, ro.GenLens, cfg.EOS, forced)
	if err != nil {
		return nil, err
	}
	ro.Masks = masks
	ro.Texts = make([]string, n)
	for i, r := range rows {
		body := r.Tokens[:masks.Lengths[i]]
		if !masks.Truncated[i] {
			body = body[:len(body)-1]
		}
		s, err := tok.Decode(body)
		if err != nil {
			return nil, fmt.Errorf("decoding completion %d: %w", i, err)
		}
		ro.Texts[i] = CompletionText(s, !masks.Truncated[i])
	}
	return ro, nil
}

// LogpMismatch compares sampling-time log-probs with training-time ones over mask: the mean
// and the largest absolute difference. A gap well above float32 rounding means the sampler and
// the loss see different distributions (temperature, truncation, or different tokens).
func LogpMismatch(sampled, train, mask [][]float64) (mean, maxAbs float64) {
	n := 0
	for i := range mask {
		for t, m := range mask[i] {
			if m == 0 {
				continue
			}
			d := math.Abs(sampled[i][t] - train[i][t])
			mean += d
			maxAbs = math.Max(maxAbs, d)
			n++
		}
	}
	if n > 0 {
		mean /= float64(n)
	}
	return mean, maxAbs
}
