package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// DefaultToolTimeout is how long one tool call may run when ToolEnv.Timeout is zero.
const DefaultToolTimeout = 10 * time.Second

// Tool is a Go function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object. Calls are checked against its
	// types, properties, required members and array items before Func runs.
	Parameters json.RawMessage
	// Func runs a call and returns the tool message's content; an error goes back to the
	// model as a failed call. Numbers in args are json.Number, exact however large. Func
	// should return when ctx is done: a call past the timeout is answered as failed, and a
	// Func that ignores ctx keeps its goroutine until it returns.
	Func func(ctx context.Context, args map[string]any) (string, error)
}

// Judge scores the episode's final turn, the first without tool calls, given the dataset row.
type Judge func(example json.RawMessage, final Turn) (reward float64, err error)

// ToolEnv is an Env whose turns are answered by running their tool calls, one tool message
// per call in order; the first turn without calls ends the episode with Judge's reward.
type ToolEnv struct {
	Tools []Tool
	Judge Judge
	// Timeout bounds each call; zero means DefaultToolTimeout.
	Timeout time.Duration

	example json.RawMessage
	params  map[string]*schema // nil before Reset
	done    bool
}

// Schemas returns the tools section for the chat template: one OpenAI-style
// {"type": "function", "function": {"name", "description", "parameters"}} per tool.
func (e *ToolEnv) Schemas() ([]json.RawMessage, error) {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	out := make([]json.RawMessage, 0, len(e.Tools))
	for _, t := range e.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		b, err := json.Marshal(struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}{"function", function{t.Name, t.Description, params}})
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// Reset checks the tools, keeps the row for Judge, and offers the tools' schemas.
func (e *ToolEnv) Reset(ctx context.Context, example json.RawMessage, seed uint64, sample int) (ResetResult, error) {
	if err := e.compile(); err != nil {
		return ResetResult{}, err
	}
	e.example, e.done = example, false
	tools, err := e.Schemas()
	if err != nil {
		return ResetResult{}, err
	}
	return ResetResult{Tools: tools}, nil
}

// compile checks the tools' names and functions and parses their parameter schemas.
func (e *ToolEnv) compile() error {
	if e.Judge == nil {
		return errors.New("tool environment: no Judge for the final answer")
	}
	e.params = map[string]*schema{}
	for i, t := range e.Tools {
		if t.Name == "" || t.Func == nil {
			return fmt.Errorf("tool %d (%q): want a name and a Func", i, t.Name)
		}
		if _, dup := e.params[t.Name]; dup {
			return fmt.Errorf("tool %q is defined twice", t.Name)
		}
		s := &schema{types: []string{"object"}}
		if len(t.Parameters) > 0 {
			var err error
			if s, err = parseSchema(t.Parameters, "tool "+t.Name+" parameters", 0); err != nil {
				return err
			}
		}
		e.params[t.Name] = s
	}
	return nil
}

// Step runs the turn's calls, or judges the turn when it has none.
func (e *ToolEnv) Step(ctx context.Context, turn Turn) (StepResult, error) {
	if e.params == nil {
		return StepResult{}, errors.New("tool environment: Step before Reset")
	}
	if e.done {
		return StepResult{}, fmt.Errorf("turn %d: the episode has ended", turn.Index)
	}
	if len(turn.ToolCalls) == 0 {
		e.done = true
		reward, err := e.Judge(e.example, turn)
		if err != nil {
			return StepResult{}, fmt.Errorf("judging turn %d: %w", turn.Index, err)
		}
		return StepResult{Reward: reward, Done: true, Info: map[string]any{"tool_calls": 0, "tool_failures": 0}}, nil
	}
	r := StepResult{Messages: make([]Message, 0, len(turn.ToolCalls))}
	for _, c := range turn.ToolCalls {
		out, err := e.call(ctx, c)
		if ctx.Err() != nil { // the episode's own deadline or cancellation, not the tool's
			return StepResult{}, fmt.Errorf("turn %d: %w", turn.Index, ctx.Err())
		}
		if err != nil {
			r.Messages = append(r.Messages, Message{Role: "tool", Content: "error: " + err.Error(), Error: true})
			continue
		}
		r.Messages = append(r.Messages, Message{Role: "tool", Content: out})
	}
	r.Info = map[string]any{"tool_calls": len(turn.ToolCalls), "tool_failures": r.ToolFailures()}
	return r, nil
}

// call runs one call; its error is what the model is told.
func (e *ToolEnv) call(ctx context.Context, c toolcall.Call) (string, error) {
	if c.Malformed() {
		return "", errors.New(`the tool call did not parse: want {"name": ..., "arguments": {...}}`)
	}
	s, ok := e.params[c.Name]
	if !ok {
		if len(e.Tools) == 0 {
			return "", fmt.Errorf("unknown tool %q; there are no tools", c.Name)
		}
		return "", fmt.Errorf("unknown tool %q; the tools are %s", c.Name, strings.Join(e.names(), ", "))
	}
	args, err := decodeArguments(c.Arguments)
	if err != nil {
		return "", fmt.Errorf("tool %q: %w", c.Name, err)
	}
	if err := s.check(args, "arguments"); err != nil {
		return "", fmt.Errorf("tool %q: %w", c.Name, err)
	}
	t := e.Tools[slices.IndexFunc(e.Tools, func(t Tool) bool { return t.Name == c.Name })]
	return e.run(ctx, t, args)
}

// run calls t.Func within the timeout, turning a panic into an error.
func (e *ToolEnv) run(ctx context.Context, t Tool, args map[string]any) (string, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1) // buffered: a call past the timeout still finishes
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("panicked: %v", p)}
			}
		}()
		out, err := t.Func(ctx, args)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return "", fmt.Errorf("tool %q: %w", t.Name, r.err)
		}
		return r.out, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("tool %q: no answer within %v", t.Name, timeout)
		}
		return "", fmt.Errorf("tool %q: %w", t.Name, ctx.Err())
	}
}

// names lists the tools' names.
func (e *ToolEnv) names() []string {
	out := make([]string, len(e.Tools))
	for i, t := range e.Tools {
		out[i] = t.Name
	}
	return out
}

// Close does nothing: a ToolEnv holds nothing between calls.
func (e *ToolEnv) Close() error { return nil }
