package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Call is one tool call of a turn. It marshals as the environment protocol's
// {"name": ..., "arguments": {...}}, or {"name": null, "raw": "..."} when it did not parse.
type Call struct {
	// Name is the tool's name; "" when the call did not parse.
	Name string
	// Arguments is a compact JSON object ({} when the call gave none); nil when it did not parse.
	Arguments json.RawMessage
	// Raw is the call's text between its tags (the turn's text for Llama 3.1), trimmed of
	// surrounding white space, when it did not parse.
	Raw string
	// Start and End are the call's byte range in the turn's text, tags included.
	Start, End int
}

// Malformed reports whether the call did not parse.
func (c Call) Malformed() bool { return c.Name == "" }

// callJSON is the protocol's shape of a Call.
type callJSON struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
}

// MarshalJSON writes the protocol's shape of the call.
func (c Call) MarshalJSON() ([]byte, error) {
	if c.Malformed() {
		raw := c.Raw
		return json.Marshal(callJSON{Raw: &raw})
	}
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	name := c.Name
	return json.Marshal(callJSON{Name: &name, Arguments: args})
}

// UnmarshalJSON reads the protocol's shape of a call; arguments may be missing or null ({}),
// an object, or a string that holds an object.
func (c *Call) UnmarshalJSON(b []byte) error {
	var j callJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Name == nil {
		if j.Raw == nil {
			return errors.New(`tool call: "name" is null and there is no "raw"`)
		}
		*c = Call{Raw: *j.Raw}
		return nil
	}
	if *j.Name == "" {
		return errors.New(`tool call: "name" is empty`)
	}
	args, err := decodeArguments(j.Arguments)
	if err != nil {
		return fmt.Errorf("tool call %q: %w", *j.Name, err)
	}
	*c = Call{Name: *j.Name, Arguments: args}
	return nil
}

// decodeArguments returns the compact arguments object of a call's arguments value: an
// object, a JSON string holding one (as some models write), or missing or null for none.
func decodeArguments(v json.RawMessage) (json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage("{}"), nil
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 || inner[0] != '{' || !json.Valid(inner) {
			return nil, errors.New("arguments: a string that does not hold a JSON object")
		}
		v = inner
	}
	if v[0] != '{' {
		return nil, errors.New("arguments: want a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return buf.Bytes(), nil
}
