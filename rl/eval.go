package rl

import (
	"fmt"
	"sort"

	"github.com/vkgrad/vkgrad/dist"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/sample"
)

// EvalConfig says how held-out prompts are answered and scored.
type EvalConfig struct {
	// MaxNewTokens caps each answer (EOS included); >= 1.
	MaxNewTokens int `json:"max_new_tokens"`
	// EOS ends an answer.
	EOS int `json:"eos"`
	// GenBatch caps the rows decoded together; 0: all rows of one prompt length.
	GenBatch int `json:"gen_batch"`
	// Success is the reward at or above which an answer counts as correct (1 for the built-in
	// tasks, whose partial credit stays below it).
	Success float64 `json:"success"`
	// Samples is the number of answers sampled per prompt at Sampling (the training
	// temperature) for the sampled accuracy; 0 evaluates greedily only.
	Samples  int            `json:"samples"`
	Sampling sample.Options `json:"sampling"`
	// Seed fixes the sampled answers.
	Seed uint64 `json:"seed"`
	// Comm shares the scoring among its ranks, each scoring its share of the answers (every
	// rank still generates them all, and gets the result of one process); nil: this process
	// scores all.
	Comm *dist.Comm `json:"-"`
}

// score scores the answers, shared among cfg.Comm's ranks when set.
func (cfg EvalConfig) score(reward *Combined, prompts, answers []string, metas []Meta) (*RewardBatch, error) {
	if cfg.Comm == nil {
		return reward.ScoreBatch(prompts, answers, metas)
	}
	return scoreOver(cfg.Comm, cfg.Comm.GatherBytes, reward, prompts, answers, metas, 1)
}

// EvalTask is the result on the prompts of one task (meta["task"]).
type EvalTask struct {
	N          int     `json:"n"`
	Accuracy   float64 `json:"accuracy"` // greedy answers
	MeanReward float64 `json:"mean_reward"`
	// SampledAccuracy is the share of correct answers among Samples sampled per prompt.
	SampledAccuracy float64 `json:"sampled_accuracy"`
}

// EvalResult is a greedy evaluation.
type EvalResult struct {
	EvalTask
	ByTask map[string]EvalTask `json:"by_task"`
	// Answers are the scored completions, in prompt order.
	Answers []string  `json:"-"`
	Rewards []float64 `json:"-"`
}

// Evaluate answers every prompt greedily (temperature 0, so the result does not depend on a
// seed) and scores the answers with reward; with cfg.Samples it also samples that many answers
// per prompt at cfg.Sampling and reports the share that are correct.
func Evaluate(m Policy, tok Tokenizer, prompts []Prompt, reward *Combined, cfg EvalConfig) (*EvalResult, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("evaluate: no prompts")
	}
	if cfg.MaxNewTokens < 1 {
		return nil, fmt.Errorf("max_new_tokens %d: want >= 1", cfg.MaxNewTokens)
	}
	if cfg.GenBatch < 0 {
		return nil, fmt.Errorf("gen_batch %d: want >= 0", cfg.GenBatch)
	}
	if cfg.EOS < 0 || cfg.EOS >= m.VocabSize() {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, m.VocabSize())
	}
	if cfg.Samples < 0 {
		return nil, fmt.Errorf("samples %d: want >= 0", cfg.Samples)
	}
	rc := RolloutConfig{MaxNewTokens: cfg.MaxNewTokens, EOS: cfg.EOS, GenBatch: cfg.GenBatch, Sampling: cfg.Sampling}
	if cfg.Samples > 0 {
		if err := rc.Validate(); err != nil {
			return nil, err
		}
	}
	ro, err := generate(m, tok, prompts, rc, true, nil)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(prompts))
	metas := make([]Meta, len(prompts))
	for i, p := range prompts {
		texts[i], metas[i] = p.Text, p.Meta
	}
	rb, err := cfg.score(reward, texts, ro.Texts, metas)
	if err != nil {
		return nil, err
	}
	res := &EvalResult{ByTask: map[string]EvalTask{}, Answers: ro.Texts, Rewards: rb.Total}
	type acc struct {
		n, ok int
		sum   float64
	}
	by := map[string]*acc{}
	var all acc
	for i, r := range rb.Total {
		name := prompts[i].Meta["task"]
		if by[name] == nil {
			by[name] = &acc{}
		}
		for _, a := range []*acc{&all, by[name]} {
			a.n++
			a.sum += r
			if r >= cfg.Success {
				a.ok++
			}
		}
	}
	sampled := map[string]*acc{}
	var allS acc
	if cfg.Samples > 0 {
		rows := make([]Prompt, 0, len(prompts)*cfg.Samples)
		for _, p := range prompts {
			for range cfg.Samples {
				rows = append(rows, p)
			}
		}
		sro, err := generate(m, tok, rows, rc, false, rng.New(cfg.Seed))
		if err != nil {
			return nil, err
		}
		texts, metas := make([]string, len(rows)), make([]Meta, len(rows))
		for i, p := range rows {
			texts[i], metas[i] = p.Text, p.Meta
		}
		srb, err := cfg.score(reward, texts, sro.Texts, metas)
		if err != nil {
			return nil, err
		}
		for i, r := range srb.Total {
			name := rows[i].Meta["task"]
			if sampled[name] == nil {
				sampled[name] = &acc{}
			}
			for _, a := range []*acc{&allS, sampled[name]} {
				a.n++
				if r >= cfg.Success {
					a.ok++
				}
			}
		}
	}
	mk := func(a, s *acc) EvalTask {
		e := EvalTask{N: a.n, Accuracy: float64(a.ok) / float64(a.n), MeanReward: a.sum / float64(a.n)}
		if s != nil && s.n > 0 {
			e.SampledAccuracy = float64(s.ok) / float64(s.n)
		}
		return e
	}
	res.EvalTask = mk(&all, &allS)
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		res.ByTask[k] = mk(by[k], sampled[k])
	}
	return res, nil
}
