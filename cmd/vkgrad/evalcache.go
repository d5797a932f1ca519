package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// beforeEvalCache is the cache for this run's figure before training, or nil (with the reason
// logged) when the figure must be measured: --no-eval-cache, no --init (a new model), a
// reward program (an outside command whose answers may change), several processes (they
// must all take the same path), or no user cache directory.
func (r *rlRun) beforeEvalCache() *rlrun.EvalCache {
	why := ""
	switch {
	case r.tasks.NoEvalCache:
		return nil
	case r.init == "":
		return nil
	case r.env.Active():
		why = "episodes in an environment are measured afresh"
	case r.tasks.Data.RewardCmd != "":
		why = "a reward program (--reward-cmd) may answer differently from run to run"
	case r.cluster.Comm() != nil:
		why = "a data-parallel job measures it on every process"
	}
	dir, err := rlrun.EvalCacheDir()
	if err != nil && why == "" {
		why = err.Error()
	}
	if why != "" {
		r.log.Debug().Str("why", why).Msg("held-out accuracy before training not cached")
		return nil
	}
	return &rlrun.EvalCache{Dir: dir, Log: r.log}
}

// evaluateBefore is the held-out accuracy of m, the initial model, before training: read from
// the cache when an earlier run measured it with the same model and settings, else measured
// and stored.
func (r *rlRun) evaluateBefore(m rl.Policy) (*rl.EvalResult, error) {
	measure := func() (*rl.EvalResult, error) {
		return r.setup.Evaluate(m, &r.tasks, r.family, r.evalTemp, r.cluster.Comm())
	}
	c := r.beforeEvalCache()
	if c == nil || len(r.setup.HeldOut) == 0 {
		return measure()
	}
	key, err := r.beforeEvalKey()
	if err != nil {
		r.log.Warn().Err(err).Msg("held-out accuracy before training not cached")
		return measure()
	}
	return c.Get(key, len(r.setup.HeldOut), measure)
}

// beforeEvalKey fingerprints this run's figure before training.
func (r *rlRun) beforeEvalKey() (string, error) {
	model, err := initContentHash(r.init)
	if err != nil {
		return "", fmt.Errorf("fingerprinting --init %s: %w", r.init, err)
	}
	bin, err := rlrun.ExecutableHash()
	if err != nil {
		return "", fmt.Errorf("fingerprinting vkgrad itself: %w", err)
	}
	k := rlrun.EvalKey{Format: rlrun.EvalKeyFormat, Version: Version, Binary: bin, Model: model, LoRA: r.lora, Device: r.be.Name(),
		EOS: r.family.EOS, Vocab: r.family.Tok.VocabSize(), Temperature: r.evalTemp}
	tasks := r.tasks
	tasks.DataSeed, tasks.Shuffle = 0, false // the training stream's, not the held-out set's
	k.Tasks = tasks
	if r.precision != "fp32" {
		k.Precision = r.precision
	}
	for _, p := range r.setup.HeldOut {
		k.HeldOut = append(k.HeldOut, rlrun.HeldOutID{Text: p.Text, Tokens: r.family.Tok.Encode(p.Text), Answer: p.Answer, Meta: p.Meta})
	}
	return k.Hash()
}

// initContentHash fingerprints the initial model at path, a checkpoint or a Hugging Face
// directory.
func initContentHash(path string) (string, error) {
	hf, err := load.IsLlamaDir(path)
	if err != nil {
		return "", err
	}
	return rlrun.ModelContentHash(path, hf)
}
