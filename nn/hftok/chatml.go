package hftok

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The tool-call format the Qwen tools block shows the model. Qwen2.5's first release wrote
// it with doubled braces, which its template prints as they are.
const (
	qwenCallFormat      = `{"name": <function-name>, "arguments": <args-json-object>}`
	qwenEarlyCallFormat = `{{"name": <function-name>, "arguments": <args-json-object>}}`
)

// qwen2 is Qwen2's ChatML: every turn as it is, after a default system turn when the
// conversation has none. The template has no tools.
type qwen2 struct{}

func (qwen2) Name() string { return "qwen2" }

func (qwen2) Render(msgs []Message, o ChatOptions) (string, error) {
	if err := plainOnly("qwen2", msgs, o); err != nil {
		return "", err
	}
	var b strings.Builder
	if msgs[0].Role != "system" {
		b.WriteString("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
	}
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// qwen25 is Qwen2.5's ChatML: Qwen's default system prompt, the tools listed in the system
// turn, tool calls as <tool_call> JSON after the content and consecutive tool results in one
// user turn.
type qwen25 struct {
	callFormat string
}

func (q qwen25) Name() string {
	if q.callFormat == qwenEarlyCallFormat {
		return "qwen2.5-early"
	}
	return "qwen2.5"
}

const qwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

func (q qwen25) Render(msgs []Message, o ChatOptions) (string, error) {
	if err := noQwen3Options("qwen2.5", msgs, o); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := q.writeSystem(&b, msgs, o.Tools); err != nil {
		return "", err
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "system" && i > 0 || m.Role == "assistant" && len(m.ToolCalls) == 0:
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			if err := qwen25ToolCallTurn(&b, m); err != nil {
				return "", fmt.Errorf("message %d: %w", i, err)
			}
		case m.Role == "tool":
			chatmlToolResponse(&b, msgs, i)
		case m.Role == "system":
		default:
			return "", fmt.Errorf("message %d has role %q; this template renders system, user, assistant and tool", i, m.Role)
		}
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String(), nil
}

// writeSystem writes the system turn, always present: the first system message or Qwen's
// default, followed by the tool list when there are tools.
func (q qwen25) writeSystem(b *strings.Builder, msgs []Message, tools []json.RawMessage) error {
	system := qwen25System
	if msgs[0].Role == "system" {
		system = msgs[0].Content
	}
	if len(tools) == 0 {
		b.WriteString("<|im_start|>system\n" + system + "<|im_end|>\n")
		return nil
	}
	b.WriteString("<|im_start|>system\n" + system + "\n\n")
	return chatmlTools(b, tools, q.callFormat)
}

// qwen25ToolCallTurn writes an assistant turn that calls tools, after its content if any.
func qwen25ToolCallTurn(b *strings.Builder, m Message) error {
	b.WriteString("<|im_start|>assistant")
	if m.Content != "" {
		b.WriteString("\n" + m.Content)
	}
	for _, c := range m.ToolCalls {
		f := c.function()
		args, err := pyJSON(f.Arguments)
		if err != nil {
			return fmt.Errorf("tool call %q: %w", f.Name, err)
		}
		b.WriteString("\n<tool_call>\n{\"name\": \"" + f.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
	}
	b.WriteString("<|im_end|>\n")
	return nil
}

// chatmlTools writes the Qwen tools block, from "# Tools" to the end of the system turn.
func chatmlTools(b *strings.Builder, tools []json.RawMessage, callFormat string) error {
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		s, err := pyJSON(t)
		if err != nil {
			return err
		}
		b.WriteString("\n" + s)
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n" + callFormat + "\n</tool_call><|im_end|>\n")
	return nil
}

// chatmlToolResponse writes tool result i; a run of consecutive results shares one user turn.
func chatmlToolResponse(b *strings.Builder, msgs []Message, i int) {
	if i == 0 || msgs[i-1].Role != "tool" {
		b.WriteString("<|im_start|>user")
	}
	b.WriteString("\n<tool_response>\n" + msgs[i].Content + "\n</tool_response>")
	if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
		b.WriteString("<|im_end|>\n")
	}
}

// function is the call's function, whether nested under "function" or given flat.
func (c ToolCall) function() ToolFunction {
	if c.Function != nil {
		return *c.Function
	}
	return c.ToolFunction
}

// noQwen3Options refuses what only Qwen3's template renders, rather than dropping it.
func noQwen3Options(name string, msgs []Message, o ChatOptions) error {
	if len(msgs) == 0 {
		return errors.New("no messages")
	}
	if o.EnableThinking != nil {
		return fmt.Errorf("%s's template has no enable_thinking", name)
	}
	for i, m := range msgs {
		if m.ReasoningContent != nil {
			return fmt.Errorf("message %d: %s's template has no reasoning_content", i, name)
		}
	}
	return nil
}

// plainOnly refuses tools and tool calls for templates without them, which would drop them.
func plainOnly(name string, msgs []Message, o ChatOptions) error {
	if err := noQwen3Options(name, msgs, o); err != nil {
		return err
	}
	if o.Tools != nil {
		return fmt.Errorf("%s's template has no tools", name)
	}
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 {
			return fmt.Errorf("message %d: %s's template has no tool calls", i, name)
		}
	}
	return nil
}
