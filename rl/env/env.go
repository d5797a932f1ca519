package env

import (
	"context"
	"encoding/json"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// Env is one episode's environment. A trainer calls Reset once, Step after every assistant
// turn until a result is Done, and Close once, whatever happened before. An error from Reset
// or Step ends the episode as an environment error.
type Env interface {
	// Reset starts the episode from a dataset row (a JSON object; null when there is no
	// dataset). seed picks the task and is the same for every sample of a group; sample
	// numbers the group's samples from 0.
	Reset(ctx context.Context, example json.RawMessage, seed uint64, sample int) (ResetResult, error)
	// Step answers the assistant turn.
	Step(ctx context.Context, turn Turn) (StepResult, error)
	// Close releases what the episode holds.
	Close() error
}

// Factory makes the Env of one episode.
type Factory func() (Env, error)

// Message is a message of the conversation. It is a superset of a dataset's {"role",
// "content"} message: an assistant message may carry its tool calls, and a tool message
// whether the tool failed.
type Message struct {
	// Role is "system", "user", "assistant" or "tool"; a step's messages are "tool" or "user".
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are an assistant message's calls, in the protocol's {"name", "arguments"} shape.
	ToolCalls []toolcall.Call `json:"tool_calls,omitempty"`
	// Error marks a tool message that reports a failed call (a tool's error, an unknown tool,
	// a malformed call, arguments the schema refuses, a timeout); the trainer counts it.
	Error bool `json:"error,omitempty"`
}

// ResetResult is how an episode starts.
type ResetResult struct {
	// Messages are appended to the row's prompt (or are the prompt when the row has none).
	Messages []Message `json:"messages,omitempty"`
	// Tools, OpenAI-style function specs, replace the row's tools when not nil; an empty,
	// non-nil list offers none. nil keeps the row's.
	Tools []json.RawMessage `json:"tools,omitempty"`
}

// MarshalJSON writes the protocol's reset reply, which tells no tools ("tools": []) from the
// row's tools (no "tools" member).
func (r ResetResult) MarshalJSON() ([]byte, error) {
	type plain struct {
		Messages []Message          `json:"messages,omitempty"`
		Tools    *[]json.RawMessage `json:"tools,omitempty"`
	}
	p := plain{Messages: r.Messages}
	if r.Tools != nil {
		p.Tools = &r.Tools
	}
	return json.Marshal(p)
}

// Turn is an assistant turn as the environment gets it.
type Turn struct {
	// Index counts the episode's turns from 0.
	Index int `json:"turn"`
	// Text is the turn's sampled tokens decoded, end-of-turn token removed, thinking and
	// tool-call blocks verbatim.
	Text string `json:"text"`
	// Truncated is set when the turn has no end-of-turn token (cut by a token limit).
	Truncated bool `json:"truncated"`
	// ToolCalls are the calls parsed from Text after its last </think>, malformed ones
	// included, in order.
	ToolCalls []toolcall.Call `json:"tool_calls"`
}

// StepResult is the environment's answer to a turn.
type StepResult struct {
	// Messages ("tool" or "user") go to the model before its next turn; when Done they are
	// only logged.
	Messages []Message `json:"messages,omitempty"`
	// Reward is the turn's reward; the episode's return is the sum over its turns.
	Reward float64 `json:"reward"`
	// Done ends the episode.
	Done bool `json:"done"`
	// Info is free-form detail for logs.
	Info map[string]any `json:"info,omitempty"`
}

// ToolFailures counts the result's tool messages that report a failed call.
func (r StepResult) ToolFailures() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" && m.Error {
			n++
		}
	}
	return n
}
