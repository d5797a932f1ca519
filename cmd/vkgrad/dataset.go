package main

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
	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/nn/hub"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/reward"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// datasetFlags choose prompts from a dataset file (instead of --task) and how completions are
// scored; saved in the run's config.json with the other task flags.
type datasetFlags struct {
	Path          string         `json:"dataset,omitempty"`
	EvalPath      string         `json:"eval_dataset,omitempty"`
	Fields        string         `json:"dataset_field,omitempty"`
	HeldOut       float64        `json:"held_out_fraction,omitempty"`
	Reward        string         `json:"reward,omitempty"`
	RewardCmd     string         `json:"reward_cmd,omitempty"`
	RewardTimeout time.Duration  `json:"reward_timeout,omitempty"`
	Options       reward.Options `json:"reward_options"`
	// Fingerprint and EvalFingerprint identify the dataset files read (dataFingerprint), so a
	// resumed run refuses data that changed since it started.
	Fingerprint     string `json:"fingerprint,omitempty"`
	EvalFingerprint string `json:"eval_fingerprint,omitempty"`
	// Hub and EvalHub choose the split of a Hugging Face dataset ORG/NAME given as --dataset
	// or --eval-dataset; their Commit, once resolved, reads the same files on a resume.
	Hub     hubDataset `json:"dataset_hub,omitzero"`
	EvalHub hubDataset `json:"eval_dataset_hub,omitzero"`

	// files and evalFiles are the files read: the local path, or the split's files in the
	// Hugging Face cache.
	files, evalFiles []string
}

// hubDataset names one split of a Hugging Face dataset.
type hubDataset struct {
	Split    string `json:"split,omitempty"`
	Config   string `json:"config,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// defaultDatasetFlags hold out 5% of a dataset and give a reward program two minutes a batch.
func defaultDatasetFlags() datasetFlags {
	return datasetFlags{HeldOut: 0.05, RewardTimeout: 2 * time.Minute}
}

// addDatasetFlags registers the flags with d's values as defaults (setFlag re-registers them
// over a run's saved settings).
func addDatasetFlags(fs *pflag.FlagSet, d *datasetFlags) {
	fs.StringVar(&d.Path, "dataset", d.Path, "prompts from a dataset instead of --task: a file, or a Hugging Face dataset ORG/NAME (a local path of that name wins; see --dataset-split), in JSON Lines, a JSON array or Parquet, each example with \"prompt\" (text or messages) or \"messages\" (tool calls and tool turns kept), optional \"answer\"/\"completion\" and \"tools\" (function specs for the chat template); other fields reach the rewards")
	fs.StringVar(&d.EvalPath, "eval-dataset", d.EvalPath, "held-out prompts for the accuracy before and after (default: --held-out-share of --dataset); a file, or a Hugging Face dataset ORG/NAME (see --eval-dataset-split)")
	addHubDatasetFlags(fs, "dataset", "train", &d.Hub)
	addHubDatasetFlags(fs, "eval-dataset", "test", &d.EvalHub)
	fs.StringVar(&d.Fields, "dataset-field", d.Fields, "the dataset's own field names, e.g. prompt=question,answer=final_answer")
	fs.Float64Var(&d.HeldOut, "held-out-share", d.HeldOut, "with --dataset and no --eval-dataset, the share of distinct prompts held out for evaluation (at least one; chosen by --eval-seed, whatever the file's order)")
	fs.StringVar(&d.Reward, "reward", d.Reward, "with --dataset, verifiers and weights, e.g. numeric:1,format:0.2 (verifiers: "+strings.Join(reward.Names, ", ")+"; default exact, or only --reward-cmd)")
	fs.StringVar(&d.RewardCmd, "reward-cmd", d.RewardCmd, "an external reward program (run by the shell): one JSON line per batch in, {\"id\",\"prompts\",\"completions\",\"metadata\"}; one line back, {\"rewards\": [...]} (echo \"id\" to have the pairing checked), nothing else on stdout; weighted by cmd:W in --reward")
	fs.DurationVar(&d.RewardTimeout, "reward-timeout", d.RewardTimeout, "how long --reward-cmd may take to answer one batch")
	fs.StringVar(&d.Options.Regex, "reward-regex", d.Options.Regex, "the regex verifier's pattern; {answer} stands for the answer field")
	fs.StringVar(&d.Options.FormatRegex, "format-regex", d.Options.FormatRegex, "the format reward: the whole completion matches this pattern")
	fs.StringSliceVar(&d.Options.JSONKeys, "format-json-keys", d.Options.JSONKeys, "the format reward: the completion is a JSON object with these keys (in <tool_call> or a ``` fence, or bare)")
	fs.IntVar(&d.Options.TargetLength, "target-length", d.Options.TargetLength, "the length penalty: characters allowed before it starts")
}

// addHubDatasetFlags registers the flags choosing the split of a Hugging Face dataset that
// flag --NAME names; split is the default split.
func addHubDatasetFlags(fs *pflag.FlagSet, name, split string, h *hubDataset) {
	fs.StringVar(&h.Split, name+"-split", h.Split, "the split of a Hugging Face dataset --"+name+" ORG/NAME (default "+split+")")
	fs.StringVar(&h.Config, name+"-config", h.Config, "the config (subset) of a Hugging Face dataset --"+name+" ORG/NAME (default: the one the dataset card marks default, else its only one, else \"default\")")
	fs.StringVar(&h.Revision, name+"-revision", h.Revision, "branch, tag or commit of a Hugging Face dataset --"+name+" ORG/NAME (default main): looked up in the Hugging Face cache ($HF_HUB_CACHE), else downloaded into it from the Hub ($HF_ENDPOINT, $HF_TOKEN; HF_HUB_OFFLINE=1: the cache only)")
}

// setupOptions are what the command adds to the task flags when they are set up.
type setupOptions struct {
	// supervised: every prompt needs an answer to train on (sft).
	supervised bool
	// announce is called just before the reward program starts.
	announce func()
	// log says what the run does differently from what was asked (no held-out set).
	log zerolog.Logger
	// env names the environment in which each prompt starts a multi-turn episode (--env),
	// whose return the reward term env scores; "" for single-turn completions.
	env string
	// progress, when set, shows the download of a Hugging Face dataset's files.
	progress io.Writer
}

// setup builds the prompt source, held-out set and reward of a dataset run. The files'
// fingerprints are recorded, or, when the flags already hold them (a resumed run), checked.
func (d *datasetFlags) setup(t *taskFlags, enc tasks.Encoder, chat func([]tasks.Message, []json.RawMessage) (string, error), o setupOptions) (*taskSetup, error) {
	if err := d.locate(o.log, o.progress); err != nil {
		return nil, err
	}
	if err := d.fingerprint(); err != nil {
		return nil, err
	}
	verifiers, cmdWeight, err := d.verifiers(o.env != "")
	if err != nil {
		return nil, err
	}
	fields, err := tasks.ParseFieldMap(d.Fields)
	if err != nil {
		return nil, err
	}
	opt := tasks.DatasetOptions{Fields: fields, Chat: chat, RequireAnswer: o.supervised || needsAnswer(verifiers)}
	train, held, err := d.load(t, opt, o.log)
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
	s := &taskSetup{train: tasks.RLSource(list, enc), enc: enc, prompts: append(slices.Clip(train), held...)}
	if s.heldOut, err = tasks.RLPrompts(held, enc); err != nil {
		return nil, err
	}
	if s.reward, s.closers, err = d.rewards(verifiers, cmdWeight, o.announce, o.log); err != nil {
		return nil, err
	}
	return s, nil
}

// locate finds the files of --dataset and --eval-dataset, showing a download's progress on
// progress when set. An --eval-dataset naming the same Hub dataset takes --dataset's config and
// commit unless given its own.
func (d *datasetFlags) locate(log zerolog.Logger, progress io.Writer) error {
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
func locateDataset(name string, path *string, split string, h *hubDataset, log zerolog.Logger, progress io.Writer) ([]string, error) {
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
func (d *datasetFlags) fingerprint() error {
	for _, f := range []struct {
		flag, path string
		files      []string
		saved      *string
	}{{"--dataset", d.Path, d.files, &d.Fingerprint}, {"--eval-dataset", d.EvalPath, d.evalFiles, &d.EvalFingerprint}} {
		if f.path == "" {
			continue
		}
		now, err := filesFingerprint(f.files)
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
func (d *datasetFlags) load(t *taskFlags, opt tasks.DatasetOptions, log zerolog.Logger) (train, held []tasks.Prompt, err error) {
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
func (d *datasetFlags) verifiers(episodes bool) ([]rl.Weighted, float64, error) {
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
func (d *datasetFlags) rewards(terms []rl.Weighted, cmdWeight float64, announce func(), log zerolog.Logger) (*rl.Combined, []func(), error) {
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
func (d *datasetFlags) settleCmdTerm(kept []string, cmdWeight float64, fallback bool) ([]string, float64, error) {
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
