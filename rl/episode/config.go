package episode

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/nn/sample"
)

// Why an episode stopped.
const (
	StopDone             = "done"               // the environment said so
	StopMaxTurns         = "max_turns"          // Config.MaxTurns turns were written
	StopMaxEpisodeTokens = "max_episode_tokens" // the context is full
	StopEpisodeTimeout   = "episode_timeout"    // Config.EpisodeTimeout passed
	StopEnvError         = "env_error"          // the environment failed; the episode is not trained
)

// StopReasons lists the reasons an episode stops, in a fixed order for metrics.
var StopReasons = []string{StopDone, StopMaxTurns, StopMaxEpisodeTokens, StopEpisodeTimeout, StopEnvError}

// Config says how episodes run.
type Config struct {
	// Sampling is how turns are drawn; Temperature 0 is greedy.
	Sampling sample.Options `json:"sampling"`
	// EndOfTurn is the token that ends an assistant turn (<|im_end|>, <|eot_id|>, GPT-2's EOS).
	EndOfTurn int32 `json:"end_of_turn"`
	// MaxNewTokens caps each turn's sampled tokens, the end-of-turn token included; a turn cut
	// there reaches the environment as truncated.
	MaxNewTokens int `json:"max_new_tokens"`
	Limits
}

// Limits bound an episode: its turns, its context, the environment's output and time.
type Limits struct {
	// MaxTurns caps the assistant turns of an episode.
	MaxTurns int `json:"max_turns"`
	// MaxEpisodeTokens caps the whole context: prompt, turns and the environment's tokens. The
	// decoder's limit caps it too.
	MaxEpisodeTokens int `json:"max_episode_tokens"`
	// MaxToolOutputTokens caps each tool message's content, cut as ToolOutputTruncate says;
	// 0: no cap.
	MaxToolOutputTokens int `json:"max_tool_output_tokens"`
	// ToolOutputTruncate is which part of a long tool output goes: "left" keeps its end,
	// "right" its start, "middle" both ends.
	ToolOutputTruncate string `json:"tool_output_truncate"`
	// EnvTimeout bounds each environment call (the context it gets; a call that ignores it
	// is given up a second later, ending its episode as env_error); 0: no bound.
	EnvTimeout time.Duration `json:"env_timeout"`
	// EpisodeTimeout bounds an episode's wall time; 0: no bound. A timeout makes the rollout
	// depend on the machine's speed.
	EpisodeTimeout time.Duration `json:"episode_timeout"`
	// RejoinSteps is how many decoder steps an episode sits out after each environment call,
	// while the other rows decode; an answer that takes longer holds the batch. >= 1.
	RejoinSteps int `json:"rejoin_steps"`
}

// DefaultLimits run short episodes: 4 turns in a context of 2048 tokens.
func DefaultLimits() Limits {
	return Limits{MaxTurns: 4, MaxEpisodeTokens: 2048, ToolOutputTruncate: "middle", EnvTimeout: 60 * time.Second, RejoinSteps: 4}
}

// DefaultConfig runs short episodes (DefaultLimits) of turns of up to 256 tokens.
func DefaultConfig() Config {
	return Config{Sampling: sample.DefaultOptions(), MaxNewTokens: 256, Limits: DefaultLimits()}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Sampling.Validate() != nil:
		return fmt.Errorf("sampling: %w", c.Sampling.Validate())
	case c.EndOfTurn < 0:
		return fmt.Errorf("end_of_turn %d: want a token id", c.EndOfTurn)
	case c.MaxNewTokens < 1:
		return fmt.Errorf("max_new_tokens %d: want >= 1", c.MaxNewTokens)
	}
	return c.Limits.Validate()
}

// Validate names the first bad field.
func (c Limits) Validate() error {
	switch {
	case c.MaxTurns < 1:
		return fmt.Errorf("max_turns %d: want >= 1", c.MaxTurns)
	case c.MaxEpisodeTokens < 2:
		return fmt.Errorf("max_episode_tokens %d: want >= 2 (a prompt token and a turn)", c.MaxEpisodeTokens)
	case c.MaxToolOutputTokens < 0:
		return fmt.Errorf("max_tool_output_tokens %d: want >= 0 (0: no cap)", c.MaxToolOutputTokens)
	case c.ToolOutputTruncate != "left" && c.ToolOutputTruncate != "right" && c.ToolOutputTruncate != "middle":
		return fmt.Errorf("tool_output_truncate %q: want left, right or middle", c.ToolOutputTruncate)
	case c.EnvTimeout < 0:
		return fmt.Errorf("env_timeout %v: want >= 0 (0: none)", c.EnvTimeout)
	case c.EpisodeTimeout < 0:
		return fmt.Errorf("episode_timeout %v: want >= 0 (0: none)", c.EpisodeTimeout)
	case c.RejoinSteps < 1:
		return fmt.Errorf("rejoin_steps %d: want >= 1", c.RejoinSteps)
	}
	return nil
}
