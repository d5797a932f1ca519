package rl

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/rl/objective"
)

// EOSText is GPT-2's end-of-text token as text. Rewards receive a completion as the decoded
// response tokens before the EOS, followed by EOSText when the policy emitted an EOS (see
// CompletionText), so a reward can tell an answer that stopped from one cut off by the length
// limit.
const EOSText = "<|endoftext|>"

// CompletionText is the text a reward scores: the decoded tokens before the first EOS, plus
// EOSText when the row ended with an EOS (not truncated).
func CompletionText(decodedBeforeEOS string, hasEOS bool) string {
	if hasEOS {
		return decodedBeforeEOS + EOSText
	}
	return decodedBeforeEOS
}

// Meta carries a prompt's metadata to the reward (the reference answer, the task name, ...).
type Meta map[string]string

// Reward scores one completion of a prompt. An error means the reward could not be computed
// (bad metadata, a failed checker): it is reported, never replaced by a dummy score, because a
// made-up score injects a learning signal that has nothing to do with the task.
type Reward interface {
	Name() string
	Score(prompt, completion string, meta Meta) (float64, error)
}

// BatchReward is a Reward that scores a whole batch in one call, such as an external process:
// Combined calls ScoreAll once per batch instead of Score per completion.
type BatchReward interface {
	Reward
	ScoreAll(prompts, completions []string, metas []Meta) ([]float64, error)
}

// RewardFunc adapts a function to Reward.
type RewardFunc struct {
	RewardName string
	Fn         func(prompt, completion string, meta Meta) (float64, error)
}

// Name implements Reward.
func (f RewardFunc) Name() string { return f.RewardName }

// Score implements Reward.
func (f RewardFunc) Score(prompt, completion string, meta Meta) (float64, error) {
	return f.Fn(prompt, completion, meta)
}

// Weighted is one term of a combined reward.
type Weighted struct {
	Reward Reward
	Weight float64
}

// Combined sums weighted rewards.
type Combined struct {
	parts []Weighted
}

// NewCombined checks that every term has a reward, a unique name and a finite weight.
func NewCombined(parts ...Weighted) (*Combined, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("combined reward: no rewards")
	}
	seen := map[string]bool{}
	for i, p := range parts {
		if p.Reward == nil {
			return nil, fmt.Errorf("combined reward: term %d has no reward", i)
		}
		n := p.Reward.Name()
		if n == "" {
			return nil, fmt.Errorf("combined reward: term %d has an empty name", i)
		}
		if seen[n] {
			return nil, fmt.Errorf("combined reward: name %q used twice", n)
		}
		seen[n] = true
		if math.IsNaN(p.Weight) || math.IsInf(p.Weight, 0) {
			return nil, fmt.Errorf("combined reward: weight of %q is %v", n, p.Weight)
		}
	}
	return &Combined{parts: append([]Weighted(nil), parts...)}, nil
}

// Weight is the weight of the term called name; 0 when there is none.
func (c *Combined) Weight(name string) float64 {
	for _, p := range c.parts {
		if p.Reward.Name() == name {
			return p.Weight
		}
	}
	return 0
}

// Names returns the terms' names in order.
func (c *Combined) Names() []string {
	out := make([]string, len(c.parts))
	for i, p := range c.parts {
		out[i] = p.Reward.Name()
	}
	return out
}

// RewardBatch holds the scores of a batch of completions.
type RewardBatch struct {
	Total     []float64            // weighted sum per completion
	PerReward map[string][]float64 // unweighted score of each term per completion
	Means     map[string]float64   // mean unweighted score of each term (for diagnostics)
	Stds      map[string]float64   // standard deviation (n-1) of each term's scores
}

// ScoreBatch scores completions[i] of prompts[i] with metas[i]. The first failing reward stops
// the batch with an error naming the reward and the row; non-finite scores are errors too.
func (c *Combined) ScoreBatch(prompts, completions []string, metas []Meta) (*RewardBatch, error) {
	scores, err := c.scoreTerms(prompts, completions, metas, 0)
	if err != nil {
		return nil, err
	}
	return c.batchOf(scores)
}

// scoreTerms returns each term's unweighted scores of the completions, in term order; the rows
// are numbered from firstRow in errors (a part of a larger batch).
func (c *Combined) scoreTerms(prompts, completions []string, metas []Meta, firstRow int) ([][]float64, error) {
	n := len(completions)
	if len(prompts) != n || len(metas) != n {
		return nil, fmt.Errorf("reward batch: %d prompts, %d completions, %d metadata", len(prompts), n, len(metas))
	}
	out := make([][]float64, len(c.parts))
	for k, p := range c.parts {
		scores, err := scoreTerm(p.Reward, prompts, completions, metas, firstRow)
		if err != nil {
			return nil, err
		}
		out[k] = scores
	}
	return out, nil
}

// MaxReward bounds every score and weighted total: beyond it the advantages and PPO's float32
// value loss overflow (its gradients do near 1e20), and no reward scale needs more.
const MaxReward = 1e12

// batchOf sums the terms' scores of a whole batch (scoreTerms' order) into totals and
// per-term statistics; a total beyond MaxReward is an error.
func (c *Combined) batchOf(scores [][]float64) (*RewardBatch, error) {
	n := 0
	if len(scores) > 0 {
		n = len(scores[0])
	}
	b := &RewardBatch{Total: make([]float64, n), PerReward: map[string][]float64{}, Means: map[string]float64{}, Stds: map[string]float64{}}
	for k, p := range c.parts {
		name := p.Reward.Name()
		for i, s := range scores[k] {
			b.Total[i] += p.Weight * s
		}
		b.PerReward[name] = scores[k]
		b.Means[name], b.Stds[name] = objective.MeanStd(scores[k])
	}
	for i, t := range b.Total {
		if !(math.Abs(t) <= MaxReward) {
			return nil, fmt.Errorf("reward batch, row %d: the weighted rewards sum to %g, beyond ±%g: lower the weights or scale the rewards down", i, t, MaxReward)
		}
	}
	return b, nil
}

// scoreTerm scores every completion with one reward, checking that each score is finite; rows
// are numbered from firstRow in errors. No rows make no call.
func scoreTerm(r Reward, prompts, completions []string, metas []Meta, firstRow int) ([]float64, error) {
	if len(completions) == 0 {
		return []float64{}, nil
	}
	name := r.Name()
	var scores []float64
	if br, ok := r.(BatchReward); ok {
		var err error
		if scores, err = br.ScoreAll(prompts, completions, metas); err != nil {
			return nil, fmt.Errorf("reward %q: %w", name, err)
		}
		if len(scores) != len(completions) {
			return nil, fmt.Errorf("reward %q: %d scores for %d completions", name, len(scores), len(completions))
		}
	} else {
		scores = make([]float64, len(completions))
		for i := range completions {
			s, err := r.Score(prompts[i], completions[i], metas[i])
			if err != nil {
				return nil, fmt.Errorf("reward %q, row %d: %w", name, firstRow+i, err)
			}
			scores[i] = s
		}
	}
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("reward %q, row %d: score %v is not finite", name, firstRow+i, s)
		}
		if math.Abs(s) > MaxReward {
			return nil, fmt.Errorf("reward %q, row %d: score %g is beyond ±%g: scale the rewards down (larger ones overflow the advantages and the loss)", name, firstRow+i, s, MaxReward)
		}
	}
	return scores, nil
}
