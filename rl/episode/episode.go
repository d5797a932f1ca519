package episode

import (
	"encoding/json"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl/env"
)

// Task is one episode to run.
type Task struct {
	// Messages open the conversation; a text prompt is one user message (a model without a
	// chat template sees its content as it is).
	Messages []env.Message
	// Tools are the function specs offered (OpenAI style), unless the environment's reset
	// replaces them.
	Tools []json.RawMessage
	// Example is the dataset row the environment is reset from (null when there is none).
	Example json.RawMessage
	// Seed picks the environment's task: the same for every sample of a group.
	Seed uint64
	// Sample numbers the group's samples from 0.
	Sample int
	// RNG is the episode's own stream, one uniform per sampled token; nil when greedy.
	RNG *rng.RNG
}

// Episode is what one episode did, token by token.
type Episode struct {
	// Prompt is the opening conversation's tokens, the environment's reset messages included.
	Prompt []int32
	// Tokens follow the prompt: each turn's sampled tokens, then the environment's delta.
	Tokens []int32
	// Sampled marks the tokens the policy drew; the others are the environment's, or
	// boundary tokens the template inserts, and are never trained.
	Sampled []bool
	// LogProb, Trunc, Kept and Cutoff are the sampler's record of each sampled token (see
	// sample.Pick); 0 and sample.NoCutoff on the others.
	LogProb, Trunc []float32
	Kept           []int32
	Cutoff         []float32
	// Turns are the assistant turns, in order.
	Turns []Turn
	// Return is the sum of the turns' rewards.
	Return float64
	// StopReason is one of StopReasons; Error says why for StopEnvError.
	StopReason string `json:"stop_reason"`
	Error      string `json:"error,omitempty"`
	// Messages are the whole conversation: opening messages, each turn as an assistant
	// message with its text, and the environment's replies as the model saw them (tool
	// outputs cut to MaxToolOutputTokens), and those of the last reply, which are not
	// tokenized, as they came.
	Messages []env.Message
	// Tools are the function specs the episode offered.
	Tools []json.RawMessage
	// EnvTokens counts the tokens of the environment's deltas.
	EnvTokens int
	// Drift is set when rendering Messages from scratch gives other tokens than the episode's:
	// training on a re-templated transcript would not train what was sampled.
	Drift bool
}

// Turn is one assistant turn and the environment's answer.
type Turn struct {
	// Start and End delimit the turn's sampled tokens in Episode.Tokens.
	Start, End int
	// Text is the turn's text as the environment got it.
	Text string
	// Truncated is set when the turn has no end-of-turn token.
	Truncated bool
	// ToolCalls and Malformed count the calls parsed from the turn, and those that did not
	// parse; ToolFailures the tool messages of the reply that report a failed call.
	ToolCalls, Malformed, ToolFailures int
	// Reward is the environment's reward for the turn.
	Reward float64
	// Info is the environment's free-form detail.
	Info map[string]any
}

// Trained reports whether the episode's sampled tokens may be trained: every episode but
// one that the environment failed.
func (e *Episode) Trained() bool { return e.StopReason != StopEnvError }

// LastText is the final assistant turn's text, what single-turn rewards score; "" when the
// episode wrote none.
func (e *Episode) LastText() string {
	if len(e.Turns) == 0 {
		return ""
	}
	return e.Turns[len(e.Turns)-1].Text
}
