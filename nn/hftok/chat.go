package hftok

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/vkgrad/vkgrad/internal/modelfile"
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
	// Tools are the function specs offered to the model (OpenAI style), as JSON. Llama 3.1's
	// template tells nil (no tools) from an empty list (the tools preamble, listing none).
	Tools []json.RawMessage
	// Date is Llama 3.1's date_string, "26 Jul 2024" style, for the system turn's "Today
	// Date"; empty keeps the template's own: 26 Jul 2024 for 3.1, today for 3.2. Templates
	// without the variable ignore it, as they ignore the next.
	Date string
	// ToolsInSystemMessage lists Llama 3.1's tools in the system turn rather than the first
	// user turn (tools_in_user_message=false).
	ToolsInSystemMessage bool
}

// Template renders conversations exactly as one model's chat_template does. Features the
// template has no place for (tools, tool calls, thinking) are refused rather than dropped.
type Template interface {
	// Name is the template recognised: llama3, llama3.1, llama3.2, qwen2, qwen2.5,
	// qwen2.5-early or qwen3.
	Name() string
	Render(msgs []Message, o ChatOptions) (string, error)
}

// ErrNoTemplate is LoadTemplate's error when the directory has no chat template at all (no
// tokenizer_config.json, or none in it), as opposed to one it cannot render.
var ErrNoTemplate = errors.New("no chat template")

// LoadTemplate reads the chat_template of dir/tokenizer_config.json and returns the renderer
// that reproduces it, recognised by the template's text; an unknown template is refused
// rather than guessed.
func LoadTemplate(dir string) (Template, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := modelfile.Read(path, modelfile.TokenizerConfig)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("hftok: %w: %w", ErrNoTemplate, err)
	}
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOSToken     json.RawMessage `json:"bos_token"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	var text string
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return nil, fmt.Errorf("hftok: %s: %w (no chat_template)", path, ErrNoTemplate)
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &text); err != nil || text == "" {
		return nil, fmt.Errorf("hftok: %s: chat_template is %.40s, not the text of a template (a list of named templates is not supported)", path, cfg.ChatTemplate)
	}
	bos, err := tokenContent(cfg.BOSToken)
	if err != nil {
		return nil, fmt.Errorf("hftok: %s: bos_token: %w", path, err)
	}
	t, err := templateFor(text, bos)
	if err != nil {
		return nil, fmt.Errorf("hftok: %s: %w", path, err)
	}
	return t, nil
}

// tokenContent reads a special token of tokenizer_config.json: a string, an AddedToken
// object {"content": ...} or null.
func tokenContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var tok struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.Content == nil {
		return "", fmt.Errorf("%s: want a string or an object with content", raw)
	}
	return *tok.Content, nil
}
