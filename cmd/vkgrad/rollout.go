package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
	"github.com/vkgrad/vkgrad/rl/tasks"
)

// rolloutCommand is `vkgrad rollout`.
func rolloutCommand() command {
	return command{name: "rollout", summary: "run episodes of a model in an environment without training and print each: turns, tokens, what would train, the return",
		usage: "vkgrad rollout --model M --env NAME [--dataset F] [--count N] [--temperature T] [--seed S] [--json] [flags]",
		setup: func(fs *pflag.FlagSet) func([]string) error {
			f := &rolloutFlags{env: rlrun.DefaultEnv(), count: 4, maxNew: 64, seed: 1, sampling: sample.Options{Temperature: 1, TopP: 1}}
			f.common = addCommonFlags(fs)
			f.addFlags(fs)
			return func(args []string) error { return f.run(fs, args) }
		}}
}

// rolloutFlags are the flags of `vkgrad rollout`.
type rolloutFlags struct {
	common   *commonFlags
	model    string
	env      rlrun.Env
	data     rlrun.Dataset
	count    int
	maxNew   int
	genBatch int
	sampling sample.Options
	seed     uint64
	json     bool
}

func (f *rolloutFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.model, "model", "", "the model: a Hugging Face Llama/Qwen directory, a vkgrad run directory or any checkpoint (required)")
	addEnvFlags(fs, &f.env)
	fs.StringVar(&f.data.Path, "dataset", "", "rows that open the episodes, taken in order and repeated (JSON Lines, a JSON array or Parquet; default: empty rows, which the environment's reset opens)")
	fs.StringVar(&f.data.Fields, "dataset-field", "", "the dataset's own field names, e.g. prompt=question,answer=final_answer")
	fs.IntVar(&f.count, "count", f.count, "episodes to run")
	fs.IntVar(&f.maxNew, "max-new-tokens", f.maxNew, "longest assistant turn, its end-of-turn token included")
	fs.IntVar(&f.genBatch, "gen-batch", 0, "episodes decoded together (0: all)")
	fs.Float64Var(&f.sampling.Temperature, "temperature", f.sampling.Temperature, "sampling temperature (0: greedy)")
	fs.IntVar(&f.sampling.TopK, "top-k", f.sampling.TopK, "sample from the k most likely tokens (0: all)")
	fs.Float64Var(&f.sampling.TopP, "top-p", f.sampling.TopP, "sample from the smallest set of most likely tokens reaching this probability (1: all)")
	fs.Uint64Var(&f.seed, "seed", f.seed, "seed of the environments' tasks and the sampling")
	fs.BoolVar(&f.json, "json", false, "print each episode as a JSON line instead of text")
}

// check refuses arguments and bad flags, naming the flag.
func (f *rolloutFlags) check(fs *pflag.FlagSet, args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("rollout takes no arguments, got %q", args)
	case f.model == "":
		return fmt.Errorf("rollout needs --model")
	case !f.env.Active():
		return fmt.Errorf("rollout needs --env NAME (%s) or --env-cmd PROGRAM", strings.Join(env.Names(), ", "))
	case f.count < 1:
		return fmt.Errorf("--count %d: want >= 1", f.count)
	case f.maxNew < 1:
		return fmt.Errorf("--max-new-tokens %d: want >= 1", f.maxNew)
	case f.genBatch < 0:
		return fmt.Errorf("--gen-batch %d: want >= 0 (0: all episodes at once)", f.genBatch)
	}
	if err := f.sampling.Validate(); err != nil {
		return fmt.Errorf("--temperature, --top-k, --top-p: %w", err)
	}
	return f.env.Check(givenFlags(fs), definedFlags(fs))
}

func (f *rolloutFlags) run(fs *pflag.FlagSet, args []string) error {
	if err := f.check(fs, args); err != nil {
		return err
	}
	log := f.common.logger()
	be, err := f.common.backend(log)
	if err != nil {
		return err
	}
	hfDir, err := rlrun.HFDirOf(f.model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	family, err := rlrun.OpenFamily(hfDir, rlrun.ModelTypeOf(f.model))
	if err != nil {
		return fmt.Errorf("--model %s: %w", f.model, err)
	}
	e, closeEnv, err := f.env.Environment(family)
	if err != nil {
		return err
	}
	defer func() {
		if err := closeEnv(); err != nil {
			log.Warn().Err(err).Msg("environment")
		}
	}()
	m, _, err := rlrun.LoadPolicy(be, f.model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	if err := rlrun.LimitVocab(m, family.Tok, log); err != nil {
		return err
	}
	rows, err := f.rows(family)
	if err != nil {
		return err
	}
	cfg := episode.Config{Sampling: f.sampling, EndOfTurn: int32(family.EOS), MaxNewTokens: f.maxNew, Limits: f.env.Limits}
	eps, err := rl.RunEpisodes(m, e, cfg, rows, f.seed, f.genBatch)
	if err != nil {
		return err
	}
	for i, ep := range eps {
		re, err := describeEpisode(i+1, ep, e, f.env.MaskToolSyntax)
		if err != nil {
			return err
		}
		if f.json {
			if err := json.NewEncoder(stdout).Encode(re); err != nil {
				return err
			}
			continue
		}
		re.print(stdout, len(eps))
	}
	return nil
}

// rows are the count rows that open the episodes: the dataset's in order, repeated as needed,
// or empty rows.
func (f *rolloutFlags) rows(fam *rlrun.Family) ([]rl.Prompt, error) {
	rows := make([]rl.Prompt, f.count)
	if f.data.Path == "" {
		return rows, nil
	}
	fields, err := tasks.ParseFieldMap(f.data.Fields)
	if err != nil {
		return nil, fmt.Errorf("--dataset-field: %w", err)
	}
	ps, err := tasks.LoadDataset(f.data.Path, tasks.DatasetOptions{Fields: fields, Chat: fam.Chat})
	if err != nil {
		return nil, fmt.Errorf("--dataset: %w", err)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("--dataset %s: no rows", f.data.Path)
	}
	all, err := tasks.RLPrompts(ps, tasks.EncoderOf(fam.Tok.Encode))
	if err != nil {
		return nil, fmt.Errorf("--dataset: %w", err)
	}
	for i := range rows {
		rows[i] = all[i%len(all)]
	}
	return rows, nil
}

// rolloutEpisode is one episode as rollout prints it.
type rolloutEpisode struct {
	Episode      int              `json:"episode"`
	Prompt       string           `json:"prompt"`
	PromptTokens []int32          `json:"prompt_tokens"`
	Segments     []rolloutSegment `json:"segments"`
	StopReason   string           `json:"stop_reason"`
	Error        string           `json:"error,omitempty"`
	Return       float64          `json:"return"`
	Counts       rolloutCounts    `json:"counts"`
}

// rolloutSegment is an assistant turn or the environment's reply after it, token by token.
type rolloutSegment struct {
	Role   string  `json:"role"` // assistant or environment
	Text   string  `json:"text"`
	Tokens []int32 `json:"tokens"`
	// Trained marks the tokens a training step would put on the loss; Forced those left off
	// it as fixed tool syntax (--mask-tool-syntax).
	Trained []bool `json:"trained"`
	Forced  []bool `json:"forced,omitempty"`
	// Reward is an assistant turn's reward from the environment.
	Reward *float64 `json:"reward,omitempty"`
}

// rolloutCounts are an episode's tokens by kind.
type rolloutCounts struct {
	Prompt      int `json:"prompt"`
	Sampled     int `json:"sampled"`
	Environment int `json:"environment"`
	Trained     int `json:"trained"`
	Forced      int `json:"forced"`
}

// describeEpisode lays ep out in segments with what would train: the sampled tokens of an
// episode its environment did not fail, less the forced tool syntax when mask is set.
func describeEpisode(n int, ep *episode.Episode, e *rl.Environment, mask bool) (*rolloutEpisode, error) {
	prompt, err := e.Tok.Decode(ep.Prompt)
	if err != nil {
		return nil, fmt.Errorf("episode %d: %w", n, err)
	}
	var forced []bool
	if mask && ep.Trained() {
		if forced, err = episode.ForcedToolSyntax(ep, e.Render.ToolFormat(), e.Pieces); err != nil {
			return nil, fmt.Errorf("episode %d: %w", n, err)
		}
	}
	re := &rolloutEpisode{Episode: n, Prompt: prompt, PromptTokens: ep.Prompt, StopReason: ep.StopReason, Error: ep.Error, Return: ep.Return,
		Counts: rolloutCounts{Prompt: len(ep.Prompt), Environment: ep.EnvTokens}}
	segment := func(role string, from, to int, reward *float64) error {
		if to <= from {
			return nil
		}
		toks := ep.Tokens[from:to]
		text, err := e.Tok.Decode(toks)
		if err != nil {
			return fmt.Errorf("episode %d: %w", n, err)
		}
		s := rolloutSegment{Role: role, Text: text, Tokens: toks, Trained: make([]bool, len(toks)), Reward: reward}
		if forced != nil && role == "assistant" {
			s.Forced = forced[from:to]
		}
		for k := range toks {
			sampled := ep.Sampled[from+k]
			if sampled {
				re.Counts.Sampled++
			}
			if !sampled || !ep.Trained() {
				continue
			}
			if s.Forced != nil && s.Forced[k] {
				re.Counts.Forced++
				continue
			}
			s.Trained[k] = true
			re.Counts.Trained++
		}
		re.Segments = append(re.Segments, s)
		return nil
	}
	for k, turn := range ep.Turns {
		if err := segment("assistant", turn.Start, turn.End, &ep.Turns[k].Reward); err != nil {
			return nil, err
		}
		end := len(ep.Tokens)
		if k+1 < len(ep.Turns) {
			end = ep.Turns[k+1].Start
		}
		if err := segment("environment", turn.End, end, nil); err != nil {
			return nil, err
		}
	}
	return re, nil
}

// print writes the episode as text: each segment's text, then its tokens marked + when
// trained, ^ when forced tool syntax, nothing when not trained.
func (re *rolloutEpisode) print(w io.Writer, of int) {
	fmt.Fprintf(w, "=== episode %d of %d: return %g, stop %s", re.Episode, of, re.Return, re.StopReason)
	if re.Error != "" {
		fmt.Fprintf(w, " (%s)", re.Error)
	}
	fmt.Fprintf(w, " ===\n--- prompt (%d tokens, not trained)\n%s\n", len(re.PromptTokens), re.Prompt)
	turn := 0
	for _, s := range re.Segments {
		if s.Role == "assistant" {
			turn++
			fmt.Fprintf(w, "--- assistant turn %d (%d tokens, reward %g)\n", turn, len(s.Tokens), *s.Reward)
		} else {
			fmt.Fprintf(w, "--- environment (%d tokens)\n", len(s.Tokens))
		}
		fmt.Fprintf(w, "%s\n", s.Text)
		marks := make([]string, len(s.Tokens))
		for k, id := range s.Tokens {
			switch {
			case s.Trained[k]:
				marks[k] = fmt.Sprintf("%d+", id)
			case s.Forced != nil && s.Forced[k]:
				marks[k] = fmt.Sprintf("%d^", id)
			default:
				marks[k] = fmt.Sprint(id)
			}
		}
		fmt.Fprintf(w, "tokens: %s\n", strings.Join(marks, " "))
	}
	c := re.Counts
	fmt.Fprintf(w, "counts: prompt %d, sampled %d, environment %d, trained %d (marked +), forced %d (marked ^)\n\n", c.Prompt, c.Sampled, c.Environment, c.Trained, c.Forced)
}
