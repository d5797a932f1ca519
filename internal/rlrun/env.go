package rlrun

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/episode"
)

// Env chooses the environment that makes each prompt a multi-turn episode, and bounds the
// episodes; saved in the run's config.json and restored by --resume.
type Env struct {
	// Name is a built-in environment; Cmd a program serving the environment protocol, run
	// Workers times. Neither: single-turn completions.
	Name    string         `json:"name"`
	Cmd     string         `json:"cmd,omitempty"`
	Workers int            `json:"workers,omitempty"`
	Limits  episode.Limits `json:"limits"`
	// MaskToolSyntax leaves the fixed parts of tool calls (tags, JSON punctuation) off the loss.
	MaskToolSyntax bool `json:"mask_tool_syntax,omitempty"`
}

// DefaultEnv is no environment, one worker and the default episode limits.
func DefaultEnv() Env { return Env{Workers: 1, Limits: episode.DefaultLimits()} }

// Active reports whether an environment is chosen: prompts become episodes.
func (e *Env) Active() bool { return e.Name != "" || e.Cmd != "" }

// Label names the environment in run directories, logs and metrics by task; "" when none.
func (e *Env) Label() string {
	if e.Cmd != "" {
		return "env-cmd"
	}
	return e.Name
}

// factory returns what makes each episode's environment and what stops it once the run ends:
// the processes of --env-cmd (their standard error forwarded to ours, each line prefixed), or
// nothing for a built-in environment.
func (e *Env) factory() (env.Factory, func() error, error) {
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

// Environment is what episodes in e's environment need from fam: the factory, the renderer of
// fam's chat template (plain text for a GPT-2 without one), and the tokenizer that reads the
// template's special tokens. The renderer's end-of-turn text must be fam's EOS token, which
// ends each sampled turn. close stops the environment.
func (e *Env) Environment(fam *Family) (_ *rl.Environment, close func() error, err error) {
	render, err := episodeRenderer(fam)
	if err != nil {
		return nil, nil, fmt.Errorf("--env %s: %w", e.Label(), err)
	}
	eot := render.EndOfTurn()
	if ids := fam.Special.Encode(eot); len(ids) != 1 || int(ids[0]) != fam.EOS {
		return nil, nil, fmt.Errorf("--env %s: a turn ends with %q, which encodes to %v, but the model's end-of-sequence token is %d: turns would never end; give the model a generation_config.json whose first eos_token_id is %q's id",
			e.Label(), eot, ids, fam.EOS, eot)
	}
	f, close, err := e.factory()
	if err != nil {
		return nil, nil, err
	}
	return &rl.Environment{New: f, Render: render, Tok: fam.Special, Pieces: fam.Pieces}, close, nil
}

// episodeRenderer writes episodes in fam's chat template, or, for a model without one, as
// plain text whose turns end with GPT-2's EOS.
func episodeRenderer(fam *Family) (episode.Renderer, error) {
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

// EpisodeFlags are the flags that shape episodes, which mean nothing without an environment.
var EpisodeFlags = []string{"env-workers", "max-turns", "max-episode-tokens", "max-tool-output-tokens", "tool-output-truncate",
	"env-timeout", "episode-timeout", "rejoin-steps", "mask-tool-syntax"}

// Check refuses episode flags given without an environment, an unknown environment and bad
// limits, naming the flag (given and defined as in CommandLine).
func (e *Env) Check(given map[string]string, defined map[string]bool) error {
	if !e.Active() {
		var named []string
		for _, name := range slices.Sorted(maps.Keys(given)) {
			if slices.Contains(EpisodeFlags, name) {
				named = append(named, "--"+name)
			}
		}
		if len(named) > 0 {
			return fmt.Errorf("%s shape multi-turn episodes: give --env NAME (%s)", strings.Join(named, ", "), strings.Join(env.Names(), ", "))
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
		return FlagNamed(err, defined)
	}
	return nil
}
