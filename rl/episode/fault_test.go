package episode

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/rl/env"
)

// funcEnv answers with functions, for the failure cases.
type funcEnv struct {
	reset func() (env.ResetResult, error)
	step  func(t env.Turn) (env.StepResult, error)
}

func (e funcEnv) Reset(context.Context, json.RawMessage, uint64, int) (env.ResetResult, error) {
	return e.reset()
}
func (e funcEnv) Step(_ context.Context, t env.Turn) (env.StepResult, error) { return e.step(t) }
func (e funcEnv) Close() error                                               { return nil }

func opening() (env.ResetResult, error) {
	return env.ResetResult{Messages: []env.Message{{Role: "user", Content: "go"}}}, nil
}

// TestFaultEnvironmentsEndOnlyTheirEpisode: a factory that fails, a reset or a step that
// fails, and a reward that is not a number each end their episode as env_error, with the
// cause kept; the other episodes run on. A prompt that fills the context ends the run with an
// error that says so.
func TestFaultEnvironmentsEndOnlyTheirEpisode(t *testing.T) {
	boom := errors.New("boom")
	envs := []env.Factory{
		func() (env.Env, error) { return nil, boom },
		func() (env.Env, error) {
			return funcEnv{reset: func() (env.ResetResult, error) { return env.ResetResult{}, boom }}, nil
		},
		func() (env.Env, error) {
			return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) { return env.StepResult{}, boom }}, nil
		},
		func() (env.Env, error) {
			return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) { return env.StepResult{Reward: math.NaN()}, nil }}, nil
		},
		func() (env.Env, error) {
			return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) { return env.StepResult{Reward: 1, Done: true}, nil }}, nil
		},
	}
	n := 0
	factory := func() (env.Env, error) { n++; return envs[n-1]() } // admitted in task order
	tasks := toyTasks(len(envs))
	eps, _, err := Run(newHashDecoder(len(envs), 100), byteTok{}, NewPlainRenderer("<eot>"), factory, tasks, toyConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range eps[:4] {
		if ep.StopReason != StopEnvError || ep.Error == "" || ep.Trained() {
			t.Errorf("episode %d: stopped for %q (%v), want env_error with its cause", i, ep.StopReason, ep.Error)
		}
	}
	if eps[2].Error != "boom" || !strings.Contains(eps[3].Error, "not a finite number") {
		t.Errorf("causes %q, %q", eps[2].Error, eps[3].Error)
	}
	if ep := eps[4]; ep.StopReason != StopDone || ep.Return != 1 || len(ep.Turns) != 1 {
		t.Errorf("the healthy episode: %q, return %v, %d turns", ep.StopReason, ep.Return, len(ep.Turns))
	}

	long := func() (env.Env, error) {
		return funcEnv{reset: func() (env.ResetResult, error) {
			return env.ResetResult{Messages: []env.Message{{Role: "user", Content: strings.Repeat("x", 50)}}}, nil
		}}, nil
	}
	_, _, err = Run(newHashDecoder(1, 100), byteTok{}, NewPlainRenderer("<eot>"), long, toyTasks(1), toyConfig())
	if err == nil || !strings.Contains(err.Error(), "leaves no room") {
		t.Errorf("a prompt past the context: %v", err)
	}
}

// TestEpisodeTimeout: an episode past its time stops after the turn being written, without
// another call to its environment.
func TestEpisodeTimeout(t *testing.T) {
	steps := 0
	slow := func() (env.Env, error) {
		return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) {
			steps++
			time.Sleep(30 * time.Millisecond)
			return env.StepResult{Messages: []env.Message{{Role: "user", Content: "more"}}}, nil
		}}, nil
	}
	cfg := toyConfig()
	cfg.EpisodeTimeout, cfg.MaxTurns, cfg.MaxEpisodeTokens = 10*time.Millisecond, 10, 200
	eps, _, err := Run(newHashDecoder(1, 300), byteTok{}, NewPlainRenderer("<eot>"), slow, toyTasks(1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ep := eps[0]; ep.StopReason != StopEpisodeTimeout || len(ep.Turns) != 1 || steps != 1 {
		t.Errorf("stopped for %q after %d turns and %d steps; want a timeout after the first", ep.StopReason, len(ep.Turns), steps)
	}
}

// TestCutToolOutput: each mode keeps n tokens from its side.
func TestCutToolOutput(t *testing.T) {
	ids := []int32{1, 2, 3, 4, 5, 6, 7}
	for mode, want := range map[string][]int32{"left": {5, 6, 7}, "right": {1, 2, 3}, "middle": {1, 2, 7}} {
		if got := cut(ids, 3, mode); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", mode, got, want)
		}
	}
}

// TestConfigValidate names the bad field.
func TestConfigValidate(t *testing.T) {
	for field, edit := range map[string]func(*Config){
		"max_new_tokens":       func(c *Config) { c.MaxNewTokens = 0 },
		"max_turns":            func(c *Config) { c.MaxTurns = 0 },
		"max_episode":          func(c *Config) { c.MaxEpisodeTokens = 1 },
		"tool_output_truncate": func(c *Config) { c.ToolOutputTruncate = "both" },
		"rejoin_steps":         func(c *Config) { c.RejoinSteps = 0 },
		"env_timeout":          func(c *Config) { c.EnvTimeout = -1 },
	} {
		c := toyConfig()
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// TestToolOutputCapped: a tool message over MaxToolOutputTokens reaches the model cut to that
// many tokens, as ToolOutputTruncate says; a user message is never cut.
func TestToolOutputCapped(t *testing.T) {
	long := func() (env.Env, error) {
		return funcEnv{reset: opening, step: func(tn env.Turn) (env.StepResult, error) {
			return env.StepResult{Messages: []env.Message{{Role: "tool", Content: "0123456789abcdefghij"}, {Role: "user", Content: "0123456789"}},
				Done: tn.Index == 1}, nil
		}}, nil
	}
	for mode, want := range map[string]string{"left": "fghij", "right": "01234", "middle": "012ij"} {
		cfg := toyConfig()
		cfg.MaxToolOutputTokens, cfg.ToolOutputTruncate, cfg.MaxEpisodeTokens = 5, mode, 100
		eps, _, err := Run(newHashDecoder(1, 200), byteTok{}, NewPlainRenderer("<eot>"), long, toyTasks(1), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ep := eps[0]
		if len(ep.Turns) != 2 {
			t.Fatalf("%s: %d turns", mode, len(ep.Turns))
		}
		got, _ := byteTok{}.Decode(ep.Tokens[ep.Turns[0].End:ep.Turns[1].Start])
		if got = strings.TrimPrefix(got, "<eot>"); got != want+"\n0123456789\n" {
			t.Errorf("%s: the reply reached the model as %q", mode, got)
		}
		if ep.Messages[2].Content != want {
			t.Errorf("%s: the transcript holds %q, not what the model saw", mode, ep.Messages[2].Content)
		}
	}
}

// TestEnvironmentIgnoringItsDeadline: a step that ignores its context's deadline ends its
// episode as env_error once EnvTimeout and a grace period have passed, instead of holding
// the batch; the other episodes finish.
func TestEnvironmentIgnoringItsDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	n := 0
	factory := func() (env.Env, error) {
		n++
		if n == 1 {
			return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) {
				<-release // ignores the deadline
				return env.StepResult{}, nil
			}}, nil
		}
		return funcEnv{reset: opening, step: func(env.Turn) (env.StepResult, error) { return env.StepResult{Done: true}, nil }}, nil
	}
	cfg := toyConfig()
	cfg.EnvTimeout = 20 * time.Millisecond
	start := time.Now()
	eps, _, err := Run(newHashDecoder(2, 100), byteTok{}, NewPlainRenderer("<eot>"), factory, toyTasks(2), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ep := eps[0]; ep.StopReason != StopEnvError || !strings.Contains(ep.Error, "ignored its deadline") {
		t.Errorf("the hung episode: %q (%s)", ep.StopReason, ep.Error)
	}
	if eps[1].StopReason != StopDone {
		t.Errorf("the other episode: %q", eps[1].StopReason)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run took %v", took)
	}
}
