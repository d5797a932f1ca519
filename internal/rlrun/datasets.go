package rlrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/fingerprint"
	"github.com/vkgrad/vkgrad/nn/hub"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/reward"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// Dataset chooses prompts from a dataset file (instead of --task) and how completions are
// scored; saved in the run's config.json with the other task flags.
type Dataset struct {
	Path          string         `json:"dataset,omitempty"`
	EvalPath      string         `json:"eval_dataset,omitempty"`
	Fields        string         `json:"dataset_field,omitempty"`
	HeldOut       float64        `json:"held_out_fraction,omitempty"`
	Reward        string         `json:"reward,omitempty"`
	RewardCmd     string         `json:"reward_cmd,omitempty"`
	RewardTimeout time.Duration  `json:"reward_timeout,omitempty"`
	Options       reward.Options `json:"reward_options"`
	// Fingerprint and EvalFingerprint identify the dataset files read (fingerprint.Files), so a
	// resumed run refuses data that changed since it started.
	Fingerprint     string `json:"fingerprint,omitempty"`
	EvalFingerprint string `json:"eval_fingerprint,omitempty"`
	// Hub and EvalHub choose the split of a Hugging Face dataset ORG/NAME given as --dataset
	// or --eval-dataset; their Commit, once resolved, reads the same files on a resume.
	Hub     HubDataset `json:"dataset_hub,omitzero"`
	EvalHub HubDataset `json:"eval_dataset_hub,omitzero"`

	// files and evalFiles are the files read: the local path, or the split's files in the
	// Hugging Face cache.
	files, evalFiles []string
}

// HubDataset names one split of a Hugging Face dataset.
type HubDataset struct {
	Split    string `json:"split,omitempty"`
	Config   string `json:"config,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// DefaultDataset holds out 5% of a dataset and give a reward program two minutes a batch.
func DefaultDataset() Dataset {
	return Dataset{HeldOut: 0.05, RewardTimeout: 2 * time.Minute}
}

// setup builds the prompt source, held-out set and reward of a dataset run. The files'
// fingerprints are recorded, or, when the flags already hold them (a resumed run), checked.
func (d *Dataset) setup(t *Tasks, enc tasks.Encoder, chat func([]tasks.Message, []json.RawMessage) (string, error), o SetupOptions) (*Setup, error) {
	if err := d.locate(o.Log, o.Progress); err != nil {
		return nil, err
	}
	if err := d.fingerprint(); err != nil {
		return nil, err
	}
	verifiers, cmdWeight, err := d.verifiers(o.Env != "")
	if err != nil {
		return nil, err
	}
	fields, err := tasks.ParseFieldMap(d.Fields)
	if err != nil {
		return nil, err
	}
	opt := tasks.DatasetOptions{Fields: fields, Chat: chat, RequireAnswer: o.Supervised || needsAnswer(verifiers)}
	train, held, err := d.load(t, opt, o.Log)
	if err != nil {
		return nil, err
	}
	if err := checkAnswers(verifiers, train, held); err != nil {
		return nil, err
	}
	list, err := tasks.NewList(train, true, t.DataSeed)
	if err != nil {
		return nil, err
	}
	s := &Setup{Train: tasks.RLSource(list, enc), Enc: enc, Prompts: append(slices.Clip(train), held...)}
	if s.HeldOut, err = tasks.RLPrompts(held, enc); err != nil {
		return nil, err
	}
	if s.Reward, s.closers, err = d.rewards(verifiers, cmdWeight, o.Announce, o.Log); err != nil {
		return nil, err
	}
	return s, nil
}

// locate finds the files of --dataset and --eval-dataset, showing a download's progress on
// progress when set. An --eval-dataset naming the same Hub dataset takes --dataset's config and
// commit unless given its own.
func (d *Dataset) locate(log zerolog.Logger, progress io.Writer) error {
	var err error
	if d.files, err = locateDataset("dataset", &d.Path, "train", &d.Hub, log, progress); err != nil {
		return err
	}
	if d.EvalPath == d.Path && d.Hub.Commit != "" {
		if d.EvalHub.Config == "" {
			d.EvalHub.Config = d.Hub.Config
		}
		if d.EvalHub.Revision == "" && d.EvalHub.Commit == "" {
			d.EvalHub.Commit = d.Hub.Commit
		}
	}
	d.evalFiles, err = locateDataset("eval-dataset", &d.EvalPath, "test", &d.EvalHub, log, progress)
	return err
}

// locateDataset returns the files flag --NAME names: an existing path (made absolute), else
// the split of the Hugging Face dataset of that name, resolved at its recorded commit when a
// resumed run recorded one; h then records the split, config and commit read. A download
// draws its progress bar on progress when set. A path given with the flags of a Hub dataset
// is refused.
func locateDataset(name string, path *string, split string, h *HubDataset, log zerolog.Logger, progress io.Writer) ([]string, error) {
	if *path == "" {
		return nil, nil
	}
	if _, err := os.Stat(*path); err == nil || !hub.IsRepoID(*path) {
		for _, f := range [][2]string{{"split", h.Split}, {"config", h.Config}, {"revision", h.Revision}} {
			if f[1] != "" {
				return nil, fmt.Errorf("--%s-%s %s: --%s %s is a local file, not a Hugging Face dataset ORG/NAME", name, f[0], f[1], name, *path)
			}
		}
		abs, err := filepath.Abs(*path)
		*path = abs
		return []string{abs}, err
	}
	if h.Split == "" {
		h.Split = split
	}
	rev := h.Revision
	if h.Commit != "" {
		rev = h.Commit
	}
	df, err := hub.ResolveDataset(context.Background(), *path, h.Config, h.Split, hub.Options{Revision: rev, Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("--%s %s (choose with --%s-config, --%s-split, --%s-revision): %w", name, *path, name, name, name, err)
	}
	h.Config, h.Commit = df.Config, df.Commit
	log.Info().Str("dataset", *path).Str("config", df.Config).Str("split", df.Split).Str("revision", df.Revision).
		Str("commit", df.Commit).Int("files", len(df.Files)).Msg("Hugging Face dataset")
	return df.Files, nil
}

// fingerprint records the fingerprints of the dataset files, or refuses a file whose recorded
// fingerprint (a resumed run's) no longer matches: the resumed run would draw other prompts
// than the run it continues.
func (d *Dataset) fingerprint() error {
	for _, f := range []struct {
		flag, path string
		files      []string
		saved      *string
	}{{"--dataset", d.Path, d.files, &d.Fingerprint}, {"--eval-dataset", d.EvalPath, d.evalFiles, &d.EvalFingerprint}} {
		if f.path == "" {
			continue
		}
		now, err := fingerprint.Files(f.files)
		if err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
		if *f.saved != "" && *f.saved != now {
			return fmt.Errorf("%s %s changed since the run started (%s, now %s): the resumed run would not draw the prompts of the run it continues; restore the file, or start a new run from this one with --init",
				f.flag, f.path, *f.saved, now)
		}
		*f.saved = now
	}
	return nil
}

// load reads the training prompts and the held-out ones: --eval-dataset, or a share of
// --dataset's distinct prompts chosen by --eval-seed, at most --eval-size of them. A dataset of
// one distinct prompt trains without a held-out set, which log is told.
func (d *Dataset) load(t *Tasks, opt tasks.DatasetOptions, log zerolog.Logger) (train, held []tasks.Prompt, err error) {
	all, err := tasks.LoadDatasetFiles(d.files, opt)
	if err != nil {
		return nil, nil, fmt.Errorf("--dataset: %w", err)
	}
	train = all
	switch {
	case d.EvalPath != "":
		if held, err = tasks.LoadDatasetFiles(d.evalFiles, opt); err != nil {
			return nil, nil, fmt.Errorf("--eval-dataset: %w", err)
		}
	case t.EvalSize > 0:
		if train, held, err = tasks.SplitHeldOut(all, d.HeldOut, t.EvalSeed); err != nil {
			return nil, nil, fmt.Errorf("--held-out-share: %w", err)
		}
		if d.HeldOut > 0 && len(held) == 0 {
			log.Warn().Str("dataset", d.Path).Msg("one distinct prompt is too few to hold one out: training without the held-out accuracy (give --eval-dataset to measure it)")
		}
	}
	if len(held) > t.EvalSize {
		held = held[:t.EvalSize]
	}
	return train, held, nil
}

// checkAnswers asks the verifiers that can tell (reward.AnswerChecker) whether they can score
// against each prompt's answer, naming the file and line of the first they cannot.
func checkAnswers(verifiers []rl.Weighted, sets ...[]tasks.Prompt) error {
	for _, w := range verifiers {
		c, ok := w.Reward.(reward.AnswerChecker)
		if !ok {
			continue
		}
		for _, ps := range sets {
			for _, p := range ps {
				if err := c.CheckAnswer(p.Answer); err != nil {
					return fmt.Errorf("%s: %w", p.Where, err)
				}
			}
		}
	}
	return nil
}

// needsAnswer reports whether a verifier compares completions with each prompt's answer.
func needsAnswer(terms []rl.Weighted) bool {
	for _, w := range terms {
		if reward.NeedsAnswer(w.Reward) {
			return true
		}
	}
	return false
}

// verifiers parses --reward into the named verifiers (the episode's return, env, among them
// when episodes is set) and the weight of the --reward-cmd program (0 without one); the
// program is not started. With episodes and no reward named, the return alone scores.
func (d *Dataset) verifiers(episodes bool) ([]rl.Weighted, float64, error) {
	kept, cmdWeight, err := splitRewardSpec(d.Reward)
	if err != nil {
		return nil, 0, err
	}
	kept, envWeight, hasEnv, err := takeTerm(kept, "env", d.Reward)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case hasEnv && !episodes:
		return nil, 0, fmt.Errorf("--reward %q names env, the return of a multi-turn episode: give --env NAME to run episodes", d.Reward)
	case episodes && !hasEnv && len(kept) == 0 && cmdWeight == 0 && d.RewardCmd == "":
		hasEnv, envWeight = true, 1
	}
	if kept, cmdWeight, err = d.settleCmdTerm(kept, cmdWeight, !hasEnv); err != nil {
		return nil, 0, err
	}
	var terms []rl.Weighted
	if hasEnv {
		terms = append(terms, rl.Weighted{Reward: rl.EnvReward{}, Weight: envWeight})
	}
	if len(kept) == 0 {
		return terms, cmdWeight, nil
	}
	named, err := reward.Parse(strings.Join(kept, ","), d.Options)
	return append(terms, named...), cmdWeight, err
}

// rewards combines the verifiers and starts the --reward-cmd program (announced first) at
// cmdWeight, its warnings going to log; the closers stop it.
func (d *Dataset) rewards(terms []rl.Weighted, cmdWeight float64, announce func(), log zerolog.Logger) (*rl.Combined, []func(), error) {
	var closers []func()
	if d.RewardCmd != "" {
		if announce != nil {
			announce()
		}
		p, err := reward.NewProcess(d.RewardCmd, d.RewardTimeout, os.Stderr)
		if err != nil {
			return nil, nil, err
		}
		p.Warn = func(msg string) { log.Warn().Msg(msg) }
		closers = append(closers, func() {
			if err := p.Close(); err != nil {
				log.Warn().Err(err).Msg("reward program")
			}
		})
		terms = append(slices.Clip(terms), rl.Weighted{Reward: p, Weight: cmdWeight})
	}
	c, err := rl.NewCombined(terms...)
	if err != nil {
		for _, f := range closers {
			f()
		}
		return nil, nil, fmt.Errorf("--reward: %w", err)
	}
	return c, closers, nil
}

// splitRewardSpec separates the --reward terms of named verifiers from the cmd:W term and
// returns them and W (0 without a cmd term, 1 for cmd without a weight).
func splitRewardSpec(spec string) ([]string, float64, error) {
	kept, w, _, err := takeTerm(strings.Split(spec, ","), "cmd", spec)
	return kept, w, err
}

// takeTerm removes the term name[:W] of spec from terms, blank terms too, and returns the
// others and W (1 without a weight); found says whether the term was there.
func takeTerm(terms []string, name, spec string) (kept []string, weight float64, found bool, err error) {
	for _, term := range terms {
		n, w, _ := strings.Cut(strings.TrimSpace(term), ":")
		if n != name {
			if n != "" {
				kept = append(kept, term)
			}
			continue
		}
		found, weight = true, 1
		if w != "" {
			if _, err := fmt.Sscan(w, &weight); err != nil {
				return nil, 0, false, fmt.Errorf("--reward %q: weight %q of %s is not a number", spec, w, name)
			}
		}
	}
	return kept, weight, found, nil
}

// settleCmdTerm checks a cmd term and --reward-cmd come together (--reward-cmd alone weighs
// 1) and, when fallback is set, falls back to exact:1 when no reward is named at all.
func (d *Dataset) settleCmdTerm(kept []string, cmdWeight float64, fallback bool) ([]string, float64, error) {
	spec := d.Reward
	switch {
	case cmdWeight != 0 && d.RewardCmd == "":
		return nil, 0, fmt.Errorf("--reward %q names cmd but no --reward-cmd is given", spec)
	case d.RewardCmd != "" && cmdWeight == 0 && strings.TrimSpace(spec) == "":
		cmdWeight = 1
	case d.RewardCmd != "" && cmdWeight == 0:
		return nil, 0, fmt.Errorf("--reward-cmd is given but --reward %q has no cmd:W term to weight it", spec)
	case fallback && len(kept) == 0 && d.RewardCmd == "":
		kept = []string{"exact:1"}
	}
	return kept, cmdWeight, nil
}
