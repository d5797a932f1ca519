package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
)

// envFlags choose the environment that makes each prompt a multi-turn episode, and bound the
// episodes; saved in the run's config.json and restored by --resume.
type envFlags struct {
	// Name is a built-in environment; Cmd a program serving the environment protocol, run
	// Workers times. Neither: single-turn completions.
	Name    string         `json:"name"`
	Cmd     string         `json:"cmd,omitempty"`
	Workers int            `json:"workers,omitempty"`
	Limits  episode.Limits `json:"limits"`
	// MaskToolSyntax leaves the fixed parts of tool calls (tags, JSON punctuation) off the loss.
	MaskToolSyntax bool `json:"mask_tool_syntax,omitempty"`
}

func defaultEnvFlags() envFlags { return envFlags{Workers: 1, Limits: episode.DefaultLimits()} }

// episodeFlags are the flags that shape episodes, which mean nothing without an environment.
var episodeFlags = []string{"env-workers", "max-turns", "max-episode-tokens", "max-tool-output-tokens", "tool-output-truncate",
	"env-timeout", "episode-timeout", "rejoin-steps", "mask-tool-syntax"}

// addEnvFlags registers the environment flags with e's values as defaults.
func addEnvFlags(fs *pflag.FlagSet, e *envFlags) {
	l := &e.Limits
	fs.StringVar(&e.Name, "env", e.Name, "run each prompt as a multi-turn episode in this built-in environment ("+strings.Join(env.Names(), ", ")+"); --max-new-tokens is then per turn and --reward defaults to env (the episode's return)")
	fs.StringVar(&e.Cmd, "env-cmd", e.Cmd, "run each prompt as a multi-turn episode in an environment served by this program (run by the shell; one JSON object a line on its stdin and stdout, see the README); excludes --env")
	fs.IntVar(&e.Workers, "env-workers", e.Workers, "with --env-cmd: processes started, each episode staying on one")
	fs.IntVar(&l.MaxTurns, "max-turns", l.MaxTurns, "with --env: most assistant turns an episode has")
	fs.IntVar(&l.MaxEpisodeTokens, "max-episode-tokens", l.MaxEpisodeTokens, "with --env: most tokens of an episode (prompt, turns and the environment's replies; the model's context caps it too)")
	fs.IntVar(&l.MaxToolOutputTokens, "max-tool-output-tokens", l.MaxToolOutputTokens, "with --env: most tokens of one tool message, cut as --tool-output-truncate says (0: no cap)")
	fs.StringVar(&l.ToolOutputTruncate, "tool-output-truncate", l.ToolOutputTruncate, "with --env: what goes from a long tool output: left (keeps its end), right (keeps its start) or middle (keeps both ends)")
	fs.DurationVar(&l.EnvTimeout, "env-timeout", l.EnvTimeout, "with --env: longest one environment call may take, which then fails its episode (0: no bound)")
	fs.DurationVar(&l.EpisodeTimeout, "episode-timeout", l.EpisodeTimeout, "with --env: longest wall time of one episode (0: no bound; a bound makes runs depend on the machine's speed)")
	fs.IntVar(&l.RejoinSteps, "rejoin-steps", l.RejoinSteps, "with --env: decoder steps an episode sits out after each environment call while the others decode")
	fs.BoolVar(&e.MaskToolSyntax, "mask-tool-syntax", e.MaskToolSyntax, "with --env: leave the fixed parts of tool calls (tags, JSON punctuation, keys) off the loss")
}

// active reports whether an environment is chosen: prompts become episodes.
func (e *envFlags) active() bool { return e.Name != "" || e.Cmd != "" }

// label names the environment in run directories, logs and metrics by task; "" when none.
func (e *envFlags) label() string {
	if e.Cmd != "" {
		return "env-cmd"
	}
	return e.Name
}

// check refuses episode flags given without an environment, an unknown environment and bad
// limits, naming the flag.
func (e *envFlags) check(fs *pflag.FlagSet) error {
	if !e.active() {
		var given []string
		fs.Visit(func(f *pflag.Flag) {
			if slices.Contains(episodeFlags, f.Name) {
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			return fmt.Errorf("%s shape multi-turn episodes: give --env NAME (%s)", strings.Join(given, ", "), strings.Join(env.Names(), ", "))
		}
		return nil
	}
	switch {
	case e.Name != "" && e.Cmd != "":
		return fmt.Errorf("--env %s and --env-cmd: give one environment", e.Name)
	case e.Workers < 1:
		return fmt.Errorf("--env-workers %d: want >= 1", e.Workers)
	case e.Cmd == "":
		if _, err := env.Lookup(e.Name); err != nil {
			return fmt.Errorf("--env: %w", err)
		}
	}
	if err := e.Limits.Validate(); err != nil {
		return flagNamed(fs, err)
	}
	return nil
}

// factory returns what makes each episode's environment and what stops it once the run ends:
// the processes of --env-cmd (their standard error forwarded to ours, each line prefixed), or
// nothing for a built-in environment.
func (e *envFlags) factory() (env.Factory, func() error, error) {
	if e.Cmd != "" {
		p, err := env.StartProcesses(env.ProcessConfig{Command: e.Cmd, Workers: e.Workers, Timeout: e.Limits.EnvTimeout, Stderr: os.Stderr})
		if err != nil {
			return nil, nil, fmt.Errorf("--env-cmd: %w", err)
		}
		return p.Factory(), p.Close, nil
	}
	f, err := env.Lookup(e.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("--env: %w", err)
	}
	return f, func() error { return nil }, nil
}

// environment is what episodes in e's environment need from fam: the factory, the renderer of
// fam's chat template (plain text for a GPT-2 without one), and the tokenizer that reads the
// template's special tokens. The renderer's end-of-turn text must be fam's EOS token, which
// ends each sampled turn. close stops the environment.
func (e *envFlags) environment(fam *rlrun.Family) (_ *rl.Environment, close func() error, err error) {
	render, err := episodeRenderer(fam)
	if err != nil {
		return nil, nil, fmt.Errorf("--env %s: %w", e.label(), err)
	}
	eot := render.EndOfTurn()
	if ids := fam.Special.Encode(eot); len(ids) != 1 || int(ids[0]) != fam.EOS {
		return nil, nil, fmt.Errorf("--env %s: a turn ends with %q, which encodes to %v, but the model's end-of-sequence token is %d: turns would never end; give the model a generation_config.json whose first eos_token_id is %q's id",
			e.label(), eot, ids, fam.EOS, eot)
	}
	f, close, err := e.factory()
	if err != nil {
		return nil, nil, err
	}
	return &rl.Environment{New: f, Render: render, Tok: fam.Special, Pieces: fam.Pieces}, close, nil
}

// episodeRenderer writes episodes in fam's chat template, or, for a model without one, as
// plain text whose turns end with GPT-2's EOS.
func episodeRenderer(fam *rlrun.Family) (episode.Renderer, error) {
	switch {
	case fam.Template != nil:
		return episode.NewChatRenderer(fam.Template)
	case fam.TemplateErr != nil:
		return nil, fam.TemplateErr
	case fam.HFDir != "":
		return nil, errors.New("the model has no chat template (tokenizer_config.json's chat_template) to write its episodes in")
	}
	return episode.NewPlainRenderer(rl.EOSText), nil
}

// emptyRows are the prompts of an environment run without a dataset: rows with nothing in
// them but the task's name (the environment's, for the metrics by task), each episode opened
// by the environment's reset.
type emptyRows struct{ task string }

func (e emptyRows) Next() (rl.Prompt, error) { return rl.Prompt{Meta: rl.Meta{"task": e.task}}, nil }
