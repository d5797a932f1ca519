package rl

import (
	"fmt"
	"math"
	"sort"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/episode"
)

// EvalConfig says how held-out prompts are answered and scored.
type EvalConfig struct {
	// MaxNewTokens caps each answer (EOS included); >= 1.
	MaxNewTokens int `json:"max_new_tokens"`
	// EOS ends an answer.
	EOS int `json:"eos"`
	// GenBatch is the number of rows decoded together, as in RolloutConfig; 0: a slot for every row.
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
	Comm *mpi.Comm `json:"-"`
	// Progress, when set, is called as answers end with the number done and the total (greedy
	// and sampled answers together).
	Progress func(done, total int) `json:"-"`
	// Env, when set, answers each prompt with a multi-turn episode in it, within Episodes'
	// limits; the reward sees the episode's return as the term "env" and its last turn.
	Env      *Environment    `json:"-"`
	Episodes *episode.Limits `json:"-"`
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
	N        int     `json:"n"`
	Accuracy float64 `json:"accuracy"` // greedy answers
	// AccuracySE is the standard error of Accuracy as an estimate of the accuracy on the
	// population the N problems were drawn from: sqrt(p(1-p)/N).
	AccuracySE float64 `json:"accuracy_se"`
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
// per prompt at cfg.Sampling and reports the share that are correct. Each pass is one
// continuous-batching generation over all its rows on cfg.GenBatch slots, so the decoder
// stays at full width until the pass's last rows.
func Evaluate(m nn.LM, tok Tokenizer, prompts []Prompt, reward *Combined, cfg EvalConfig) (*EvalResult, error) {
	rc, err := cfg.rolloutConfig(len(prompts), m.VocabSize())
	if err != nil {
		return nil, err
	}
	p := newEvalProgress(cfg.Progress, len(prompts)*(1+cfg.Samples))
	answers, rewards, err := cfg.answerAndScore(m, tok, prompts, reward, rc, true, nil, p.finished)
	if err != nil {
		return nil, err
	}
	greedy := newTaskTally(prompts, rewards, cfg.Success)
	sampled := newTaskTally(nil, nil, cfg.Success)
	if cfg.Samples > 0 {
		rows := repeatPrompts(prompts, cfg.Samples)
		_, sampledRewards, err := cfg.answerAndScore(m, tok, rows, reward, rc, false, rng.New(cfg.Seed), p.finished)
		if err != nil {
			return nil, err
		}
		sampled = newTaskTally(rows, sampledRewards, cfg.Success)
	}
	return evalResult(greedy, sampled, answers, rewards), nil
}

// rolloutConfig checks cfg for nPrompts prompts and a vocabulary of vocab and returns the
// rollout settings it implies.
func (cfg EvalConfig) rolloutConfig(nPrompts, vocab int) (RolloutConfig, error) {
	if nPrompts == 0 {
		return RolloutConfig{}, fmt.Errorf("evaluate: no prompts")
	}
	if cfg.MaxNewTokens < 1 {
		return RolloutConfig{}, fmt.Errorf("max_new_tokens %d: want >= 1", cfg.MaxNewTokens)
	}
	if cfg.GenBatch < 0 {
		return RolloutConfig{}, fmt.Errorf("gen_batch %d: want >= 0", cfg.GenBatch)
	}
	if cfg.EOS < 0 || cfg.EOS >= vocab {
		return RolloutConfig{}, fmt.Errorf("eos %d: outside the model's vocabulary of %d", cfg.EOS, vocab)
	}
	if cfg.Samples < 0 {
		return RolloutConfig{}, fmt.Errorf("samples %d: want >= 0", cfg.Samples)
	}
	rc := RolloutConfig{MaxNewTokens: cfg.MaxNewTokens, EOS: cfg.EOS, GenBatch: cfg.GenBatch, Sampling: cfg.Sampling}
	if cfg.Samples > 0 {
		if err := rc.Validate(); err != nil {
			return RolloutConfig{}, err
		}
	}
	return rc, nil
}

// evalProgress counts the answers of an evaluation's passes for cfg.Progress.
type evalProgress struct {
	report      func(done, total int)
	done, total int
}

func newEvalProgress(report func(done, total int), total int) *evalProgress {
	return &evalProgress{report: report, total: total}
}

// finished counts one more answer and reports the count.
func (p *evalProgress) finished(int) {
	p.done++
	if p.report != nil {
		p.report(p.done, p.total)
	}
}

// answerAndScore generates an answer to every prompt (greedily, or sampled from r) and
// returns the answers and their total rewards; finished hears of each answer as it ends.
func (cfg EvalConfig) answerAndScore(m nn.LM, tok Tokenizer, prompts []Prompt, reward *Combined, rc RolloutConfig, greedy bool, r *rng.RNG, finished func(int)) ([]string, []float64, error) {
	if cfg.Env != nil {
		return cfg.episodesAndScore(m, prompts, reward, rc, greedy, finished)
	}
	ro, err := generate(m, tok, prompts, rc, greedy, r, finished)
	if err != nil {
		return nil, nil, err
	}
	texts := make([]string, len(prompts))
	metas := make([]Meta, len(prompts))
	for i, p := range prompts {
		texts[i], metas[i] = p.Text, p.Meta
	}
	rb, err := cfg.score(reward, texts, ro.Texts, metas)
	if err != nil {
		return nil, nil, err
	}
	return ro.Texts, rb.Total, nil
}

// episodesAndScore runs an episode for every prompt (greedily, or sampled with streams keyed
// by cfg.Seed, each prompt's samples a group facing one task) and returns the last turns and
// the total rewards.
func (cfg EvalConfig) episodesAndScore(m nn.LM, prompts []Prompt, reward *Combined, rc RolloutConfig, greedy bool, finished func(int)) ([]string, []float64, error) {
	if cfg.Episodes == nil {
		return nil, nil, fmt.Errorf("evaluate: an environment needs episode limits")
	}
	per := 1
	if !greedy {
		per = cfg.Samples
	}
	tc := TrainConfig{Rollout: rc, Episodes: cfg.Episodes}
	eps, _, err := runEpisodesOn(m, cfg.Env, tc.episodeConfig(greedy), episodeTasks(prompts, per, cfg.Seed, 0, greedy), rc.GenBatch)
	if err != nil {
		return nil, nil, err
	}
	if finished != nil {
		for i := range eps {
			finished(i)
		}
	}
	ro, err := episodeRollout(prompts, eps, rc.EOS, nil)
	if err != nil {
		return nil, nil, err
	}
	texts := make([]string, len(prompts))
	for i, p := range prompts {
		texts[i] = p.Text
	}
	metas, err := episodeMetas(prompts, eps)
	if err != nil {
		return nil, nil, err
	}
	rb, err := cfg.score(reward, texts, ro.Texts, metas)
	if err != nil {
		return nil, nil, err
	}
	return ro.Texts, rb.Total, nil
}

// repeatPrompts returns each prompt n times in a row.
func repeatPrompts(prompts []Prompt, n int) []Prompt {
	rows := make([]Prompt, 0, len(prompts)*n)
	for _, p := range prompts {
		for range n {
			rows = append(rows, p)
		}
	}
	return rows
}

// successCount counts answers, correct answers and their summed reward.
type successCount struct {
	n, ok int
	sum   float64
}

// taskTally counts the answers overall and by task (meta["task"]).
type taskTally struct {
	all    successCount
	byTask map[string]*successCount
}

// newTaskTally counts rewards[i], the reward of the answer to prompts[i]; an answer is correct
// at or above success.
func newTaskTally(prompts []Prompt, rewards []float64, success float64) *taskTally {
	t := &taskTally{byTask: map[string]*successCount{}}
	for i, r := range rewards {
		name := prompts[i].Meta["task"]
		if t.byTask[name] == nil {
			t.byTask[name] = &successCount{}
		}
		for _, c := range []*successCount{&t.all, t.byTask[name]} {
			c.n++
			c.sum += r
			if r >= success {
				c.ok++
			}
		}
	}
	return t
}

// evalTask is the result for the greedy count g and the sampled count s (nil or empty when
// no answers were sampled).
func evalTask(g, s *successCount) EvalTask {
	acc := float64(g.ok) / float64(g.n)
	e := EvalTask{N: g.n, Accuracy: acc, AccuracySE: math.Sqrt(acc * (1 - acc) / float64(g.n)), MeanReward: g.sum / float64(g.n)}
	if s != nil && s.n > 0 {
		e.SampledAccuracy = float64(s.ok) / float64(s.n)
	}
	return e
}

// evalResult assembles the result overall and by task, in task name order.
func evalResult(greedy, sampled *taskTally, answers []string, rewards []float64) *EvalResult {
	res := &EvalResult{EvalTask: evalTask(&greedy.all, &sampled.all), ByTask: map[string]EvalTask{}, Answers: answers, Rewards: rewards}
	names := make([]string, 0, len(greedy.byTask))
	for k := range greedy.byTask {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		res.ByTask[k] = evalTask(greedy.byTask[k], sampled.byTask[k])
	}
	return res
}
