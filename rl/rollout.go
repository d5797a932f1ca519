package rl

import (
	"fmt"
	"math"
	"sort"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// Tokenizer turns text into token ids and back; nn/tokenizer's GPT-2 tokenizer satisfies it.
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
	// GenBatch caps the rows decoded together (rows with equal prompt length share a decoder
	// batch); 0 puts all rows of one prompt length in one batch.
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
	// Texts are the completions as rewards see them (CompletionText).
	Texts []string
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

// Generate samples one completion per prompt with m's KV-cache decoder. Rows are grouped by
// prompt length (each group one decoder batch, split by cfg.GenBatch), drawn in row order from r
// so a seed fixes the whole rollout. Tokens are drawn (by nn/sample) from exactly the
// distribution objective.SampleToken and objective.ComputeTokenLogProbs describe. Masks are
// built by position with the prompts' templates.
func Generate(m Policy, tok Tokenizer, prompts []Prompt, cfg RolloutConfig, r *rng.RNG) (*Rollout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return generate(m, tok, prompts, cfg, false, r)
}

// generate is Generate, or greedy decoding (cfg.Sampling unused) when greedy is set.
func generate(m Policy, tok Tokenizer, prompts []Prompt, cfg RolloutConfig, greedy bool, r *rng.RNG) (*Rollout, error) {
	ids, err := encodePrompts(m, tok, prompts)
	if err != nil {
		return nil, err
	}
	rows, err := decodeRows(m, ids, cfg, greedy, r)
	if err != nil {
		return nil, err
	}
	return assembleRollout(tok, prompts, ids, rows, cfg)
}

// encodePrompts tokenises the prompts and checks they fit the model.
func encodePrompts(m Policy, tok Tokenizer, prompts []Prompt) ([][]int32, error) {
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

// decodeRows samples a completion for each prompt with m's KV-cache decoder. Rows are grouped
// by prompt length (each group one decoder batch, split by cfg.GenBatch), drawn in row order
// from r.
func decodeRows(m Policy, ids [][]int32, cfg RolloutConfig, greedy bool, r *rng.RNG) ([]sampledRow, error) {
	if cfg.EOS >= m.VocabSize() {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, m.VocabSize())
	}
	out := make([]sampledRow, len(ids))
	for _, rows := range groupByLength(ids, cfg.GenBatch) {
		P := len(ids[rows[0]])
		maxNew := min(cfg.MaxNewTokens, m.MaxSeqLen()-P)
		d, err := m.NewDecoder(len(rows), P+maxNew)
		if err != nil {
			return nil, fmt.Errorf("%w; gen_batch (--gen-batch) caps the rows decoded together", err)
		}
		batch := make([][]int32, len(rows))
		for k, i := range rows {
			batch[k] = ids[i]
		}
		res, err := sample.Generate(d, batch, maxNew, int32(cfg.EOS), samplerOptions(cfg.Sampling, greedy), r)
		d.Close()
		if err != nil {
			return nil, err
		}
		for k, i := range rows {
			out[i] = sampledRow{res.Tokens[k], res.LogProbs[k], res.Trunc[k], res.Kept[k], res.Cutoff[k]}
		}
	}
	return out, nil
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

// groupByLength returns row indices grouped by prompt length (shortest first, rows in order
// inside a group), each group split into chunks of at most limit rows (0: no limit).
func groupByLength(ids [][]int32, limit int) [][]int {
	byLen := map[int][]int{}
	for i, p := range ids {
		byLen[len(p)] = append(byLen[len(p)], i)
	}
	lens := make([]int, 0, len(byLen))
	for l := range byLen {
		lens = append(lens, l)
	}
	sort.Ints(lens)
	var out [][]int
	for _, l := range lens {
		rows := byLen[l]
		for len(rows) > 0 {
			k := len(rows)
			if limit > 0 {
				k = min(k, limit)
			}
			out = append(out, rows[:k])
			rows = rows[k:]
		}
	}
	return out
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
