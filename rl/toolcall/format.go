package toolcall

import "fmt"

// Format is how a model family writes tool calls.
type Format string

const (
	// Hermes is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, any number a turn,
	// with text around them (Qwen2.5, Qwen3, and models without a chat template).
	Hermes Format = "hermes"
	// Llama31 is the whole turn one `{"name": ..., "parameters": {...}}`, optionally after
	// `<|python_tag|>` (Llama 3.1 and later, as Meta's template asks for JSON tool calls).
	Llama31 Format = "llama3_json"
)

// ParseFormat returns the Format named s.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Hermes, Llama31:
		return f, nil
	}
	return "", fmt.Errorf("tool-call format %q: want %s or %s", s, Hermes, Llama31)
}

// argumentsKeys are the keys the format accepts for the arguments object.
func (f Format) argumentsKeys() []string {
	if f == Llama31 {
		// Meta's format says "parameters"; some Llama fine-tunes write "arguments", which
		// vLLM's llama3_json parser accepts too.
		return []string{"parameters", "arguments"}
	}
	return []string{"arguments"}
}
