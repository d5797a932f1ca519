package rl

import (
	"fmt"
	"sort"

	"github.com/vkgrad/vkgrad/nn/gpt2"
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
}

// EvalTask is the result on the prompts of one task (meta["task"]).
type EvalTask struct {
	N          int     `json:"n"`
	Accuracy   float64 `json:"accuracy"`
	MeanReward float64 `json:"mean_reward"`
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
// seed) and scores the answers with reward.
func Evaluate(m *gpt2.Model, tok Tokenizer, prompts []Prompt, reward *Combined, cfg EvalConfig) (*EvalResult, error) {
	if len(prompts) == 0 {
		return nil, fmt.Errorf("evaluate: no prompts")
	}
	if cfg.MaxNewTokens < 1 {
		return nil, fmt.Errorf("max_new_tokens %d: want >= 1", cfg.MaxNewTokens)
	}
	if cfg.GenBatch < 0 {
		return nil, fmt.Errorf("gen_batch %d: want >= 0", cfg.GenBatch)
	}
	if cfg.EOS < 0 || cfg.EOS >= m.Config.VocabSize {
		return nil, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, m.Config.VocabSize)
	}
	rc := RolloutConfig{MaxNewTokens: cfg.MaxNewTokens, EOS: cfg.EOS, GenBatch: cfg.GenBatch}
	ro, err := generate(m, tok, prompts, rc, true, nil)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(prompts))
	metas := make([]Meta, len(prompts))
	for i, p := range prompts {
		texts[i], metas[i] = p.Text, p.Meta
	}
	rb, err := reward.ScoreBatch(texts, ro.Texts, metas)
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
	mk := func(a *acc) EvalTask {
		return EvalTask{N: a.n, Accuracy: float64(a.ok) / float64(a.n), MeanReward: a.sum / float64(a.n)}
	}
	res.EvalTask = mk(&all)
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		res.ByTask[k] = mk(by[k])
	}
	return res, nil
}
