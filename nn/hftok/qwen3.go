package hftok

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// qwen3 is Qwen3's ChatML: thinking blocks kept only for assistant turns after the last user
// query, reasoning_content or a <think> section of the content as the thinking, and
// enable_thinking=false opening the generation with an empty thinking block.
type qwen3 struct{}

func (qwen3) Name() string { return "qwen3" }

func (qwen3) Render(msgs []Message, o ChatOptions) (string, error) {
	if len(msgs) == 0 {
		return "", errors.New("no messages")
	}
	var b strings.Builder
	if err := qwen3System(&b, msgs, o.Tools); err != nil {
		return "", err
	}
	lastQuery := qwen3LastQuery(msgs)
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "system" && i > 0:
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			if err := qwen3Assistant(&b, m, i > lastQuery, i == len(msgs)-1); err != nil {
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
		if o.EnableThinking != nil && !*o.EnableThinking {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	return b.String(), nil
}

// qwen3System writes the opening system turn: the tool list (with a first system message), or
// the first system message alone.
func qwen3System(b *strings.Builder, msgs []Message, tools []json.RawMessage) error {
	if len(tools) > 0 {
		return qwen3Tools(b, msgs, tools)
	}
	if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	}
	return nil
}

// qwen3LastQuery is the index of the last user message that is not a tool response (the last
// message when there is none): assistant turns after it keep their thinking.
func qwen3LastQuery(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			return i
		}
	}
	return len(msgs) - 1
}

// qwen3Assistant writes an assistant turn, with its thinking block when it comes after the
// last query and is the final message or has reasoning.
func qwen3Assistant(b *strings.Builder, m Message, afterLastQuery, last bool) error {
	content, reasoning := qwen3Thinking(m)
	if afterLastQuery && (last || reasoning != "") {
		b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
	} else {
		b.WriteString("<|im_start|>assistant\n" + content)
	}
	if err := qwen3Calls(b, m.ToolCalls, content); err != nil {
		return err
	}
	b.WriteString("<|im_end|>\n")
	return nil
}

// qwen3Thinking separates an assistant message's answer from its reasoning: reasoning_content
// when given, else the <think> section of the content.
func qwen3Thinking(m Message) (content, reasoning string) {
	content = m.Content
	if m.ReasoningContent != nil {
		return content, *m.ReasoningContent
	}
	if strings.Contains(content, "</think>") {
		parts := strings.Split(content, "</think>")
		content = strings.TrimLeft(parts[len(parts)-1], "\n")
		before := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
		reasoning = strings.TrimLeft(before[len(before)-1], "\n")
	}
	return content, reasoning
}

// qwen3Tools writes the system turn that lists the tools (and the system message, if first).
func qwen3Tools(b *strings.Builder, msgs []Message, tools []json.RawMessage) error {
	b.WriteString("<|im_start|>system\n")
	if msgs[0].Role == "system" {
		b.WriteString(msgs[0].Content + "\n\n")
	}
	return chatmlTools(b, tools, qwenCallFormat)
}

// qwen3Calls writes an assistant turn's tool calls after its content.
func qwen3Calls(b *strings.Builder, calls []ToolCall, content string) error {
	for i, c := range calls {
		if i > 0 || content != "" {
			b.WriteString("\n")
		}
		f := c.function()
		var args string
		if json.Unmarshal(f.Arguments, &args) != nil { // a string is inserted as it is
			var err error
			if args, err = pyJSON(f.Arguments); err != nil {
				return err
			}
		}
		b.WriteString("<tool_call>\n{\"name\": \"" + f.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
	}
	return nil
}
