package hftok

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's thinking, when kept apart from its content.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
	// ToolCalls are an assistant turn's calls, OpenAI style: {"function": {"name",
	// "arguments"}} with arguments an object or a string inserted as it is.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one function call of an assistant turn.
type ToolCall struct {
	Function *ToolFunction `json:"function,omitempty"`
	ToolFunction
}

// ToolFunction names the function and its arguments.
type ToolFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ChatOptions are the template's switches.
type ChatOptions struct {
	// AddGenerationPrompt ends the text with the assistant's turn opened, for generation.
	AddGenerationPrompt bool
	// EnableThinking, when set, is Qwen3's enable_thinking: false opens the assistant's turn
	// with an empty thinking block.
	EnableThinking *bool
	// Tools are the function specs offered to the model (OpenAI style), as JSON.
	Tools []json.RawMessage
}

// Template renders conversations exactly as one model's chat_template does.
type Template interface {
	Name() string
	Render(msgs []Message, o ChatOptions) (string, error)
}

// LoadTemplate reads the chat_template of dir/tokenizer_config.json and returns the renderer
// that reproduces it, recognised by the template's text; an unknown template is refused
// rather than guessed.
func LoadTemplate(dir string) (Template, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	var text string
	if err := json.Unmarshal(cfg.ChatTemplate, &text); err != nil || text == "" {
		return nil, fmt.Errorf("hftok: %s has no chat_template string", path)
	}
	t, err := templateFor(text)
	if err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	return t, nil
}

// templateFor recognises a template by phrases only it holds.
func templateFor(text string) (Template, error) {
	switch {
	case strings.Contains(text, "<|im_start|>") && strings.Contains(text, "reasoning_content") && strings.Contains(text, "last_query_index"):
		return qwen3{}, nil
	}
	return nil, errors.New("chat_template is not one vkgrad renders (Qwen3's ChatML); give prompts as text")
}

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
	if len(o.Tools) > 0 {
		if err := qwen3Tools(&b, msgs, o.Tools); err != nil {
			return "", err
		}
	} else if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "system" && i > 0:
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, ""
			if m.ReasoningContent != nil {
				reasoning = *m.ReasoningContent
			} else if strings.Contains(content, "</think>") {
				parts := strings.Split(content, "</think>")
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				before := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
				reasoning = strings.TrimLeft(before[len(before)-1], "\n")
			}
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>assistant\n" + content)
			}
			if err := qwen3Calls(&b, m.ToolCalls, content); err != nil {
				return "", fmt.Errorf("message %d: %w", i, err)
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
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

// qwen3Tools writes the system turn that lists the tools (and the system message, if first).
func qwen3Tools(b *strings.Builder, msgs []Message, tools []json.RawMessage) error {
	b.WriteString("<|im_start|>system\n")
	if msgs[0].Role == "system" {
		b.WriteString(msgs[0].Content + "\n\n")
	}
	b.WriteString("# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>")
	for _, t := range tools {
		s, err := pyJSON(t)
		if err != nil {
			return err
		}
		b.WriteString("\n" + s)
	}
	b.WriteString("\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")
	return nil
}

// qwen3Calls writes an assistant turn's tool calls after its content.
func qwen3Calls(b *strings.Builder, calls []ToolCall, content string) error {
	for i, c := range calls {
		if i > 0 || content != "" {
			b.WriteString("\n")
		}
		f := c.ToolFunction
		if c.Function != nil {
			f = *c.Function
		}
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
