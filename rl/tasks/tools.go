package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// ToolCall is one function call of an assistant turn.
type ToolCall struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is a compact JSON object ({} when the call gave none).
	Arguments json.RawMessage `json:"arguments"`
}

// UnmarshalJSON reads a call OpenAI style, {"type": "function", "function": {"name",
// "arguments"}}, or bare, {"name", "arguments"}; the arguments may be an object, a JSON
// string holding one (as OpenAI writes them), or absent.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var outer struct {
		Type     *string         `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if err := json.Unmarshal(b, &outer); err != nil {
		return err
	}
	inner := b
	if len(outer.Function) > 0 && string(outer.Function) != "null" {
		inner = outer.Function
	}
	if outer.Type != nil && *outer.Type != "function" {
		return fmt.Errorf("tool call of type %q (want function)", *outer.Type)
	}
	var call toolcall.Call
	if err := json.Unmarshal(inner, &call); err != nil {
		return err
	}
	if call.Malformed() {
		return errors.New(`tool call: no "name"`)
	}
	*c = ToolCall{Name: call.Name, Arguments: call.Arguments}
	return nil
}

// parseTools reads a row's function specs: a list, or a JSON string holding one (as Parquet
// stores it), of specs bare ({"name", "description", "parameters"}) or OpenAI-wrapped
// ({"type": "function", "function": {...}}). It returns them wrapped and compact, their keys
// in the row's order (templates print them as they come); nil when the field is absent, null
// or an empty list.
func parseTools(raw json.RawMessage, field string) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field %q: %v", field, err)
		}
		raw = bytes.TrimSpace([]byte(s))
		if len(raw) == 0 {
			return nil, nil
		}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("field %q: want a list of function specs, or a JSON string holding one: %v", field, err)
	}
	var out []json.RawMessage
	for i, spec := range list {
		w, err := wrapTool(spec)
		if err != nil {
			return nil, fmt.Errorf("field %q: entry %d: %w", field, i, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// wrapTool returns a function spec in OpenAI's wrapped form, compact.
func wrapTool(spec json.RawMessage) (json.RawMessage, error) {
	var head struct {
		Type     *string         `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if err := json.Unmarshal(spec, &head); err != nil || bytes.TrimSpace(spec)[0] != '{' {
		return nil, fmt.Errorf("want a JSON object, got %.60s", spec)
	}
	fn := spec
	wrapped := len(head.Function) > 0 && string(head.Function) != "null"
	switch {
	case head.Type != nil && *head.Type != "function":
		return nil, fmt.Errorf("a tool of type %q (want function)", *head.Type)
	case wrapped:
		fn = head.Function
	case head.Type != nil:
		return nil, errors.New(`"type" is "function" but there is no "function" object`)
	}
	var named struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(fn, &named); err != nil || bytes.TrimSpace(fn)[0] != '{' {
		return nil, fmt.Errorf(`"function" is %.60s, not an object`, fn)
	}
	if named.Name == nil || *named.Name == "" {
		return nil, errors.New(`the function has no "name"`)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"type":"function","function":`)
	if err := json.Compact(&buf, fn); err != nil {
		return nil, err
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// envMessages converts a conversation to the environments' messages (nil for none).
func envMessages(msgs []Message) []env.Message {
	if msgs == nil {
		return nil
	}
	out := make([]env.Message, len(msgs))
	for i, m := range msgs {
		out[i] = env.Message{Role: m.Role, Content: m.Content}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, toolcall.Call{Name: c.Name, Arguments: c.Arguments})
		}
	}
	return out
}
