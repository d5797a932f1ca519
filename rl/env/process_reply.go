package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vkgrad/vkgrad/internal/lineproto"
)

// reply is a reply line and its members by name.
type reply struct {
	line   string
	fields map[string]json.RawMessage
}

// parseFrame checks that line is a JSON object and that an "episode" or "turn" it echoes is
// the request's (turn < 0: the request has none). A failure here means the replies cannot be
// trusted to be paired with their requests.
func parseFrame(line []byte, episode string, turn int) (reply, error) {
	r := reply{line: string(line)}
	if err := json.Unmarshal(line, &r.fields); err != nil || r.fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return r, fmt.Errorf("reply %s is not a JSON object (%v): write one object a line and anything else to standard error", lineproto.Quote(r.line), err)
	}
	if raw, ok := r.member("episode"); ok {
		var got string
		if json.Unmarshal(raw, &got) != nil || got != episode {
			return r, fmt.Errorf("reply %s echoes \"episode\": %s to a request of episode %q: the replies are out of step", lineproto.Quote(r.line), raw, episode)
		}
	}
	if raw, ok := r.member("turn"); ok && turn >= 0 {
		var got int
		if json.Unmarshal(raw, &got) != nil || got != turn {
			return r, fmt.Errorf("reply %s echoes \"turn\": %s to a request of turn %d: the replies are out of step", lineproto.Quote(r.line), raw, turn)
		}
	}
	return r, nil
}

// member returns the member called name, absent when it is missing or null.
func (r reply) member(name string) (json.RawMessage, bool) {
	raw, ok := r.fields[name]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return nil, false
	}
	return raw, true
}

// replyMembers are the members any reply of the protocol may have. A reply may carry one that
// belongs to another kind of reply (an "info" with a reset, say), which is ignored; a name
// outside them all is refused, as a typo ("rewards") would otherwise be read as a reward of 0.
var replyMembers = []string{"id", "episode", "turn", "error", "messages", "tools", "reward", "done", "info"}

// check refuses a reply that says {"error": ...} and one with a member no reply has.
func (r reply) check(kind string) error {
	if raw, ok := r.member("error"); ok {
		var msg string
		if json.Unmarshal(raw, &msg) != nil {
			return fmt.Errorf("\"error\" is %s, not a string", show(raw))
		}
		if msg == "" {
			return errors.New("the environment reports an error with an empty message")
		}
		return fmt.Errorf("the environment says: %s", msg)
	}
	for _, name := range slices.Sorted(maps.Keys(r.fields)) {
		if !slices.Contains(replyMembers, name) {
			return fmt.Errorf("unknown member %q: a %s reply's members are among %s", name, kind, quoteAll(replyMembers))
		}
	}
	return nil
}

// Roles a reply's messages may have. A reset's messages open or extend the prompt, so they
// may set the system prompt or give earlier turns of the assistant, but answer no tool call.
var (
	resetRoles = []string{"system", "user", "assistant"}
	stepRoles  = []string{"tool", "user"}
)

// resetResult reads a reset reply.
func (r reply) resetResult() (ResetResult, error) {
	if err := r.check("reset"); err != nil {
		return ResetResult{}, err
	}
	var res ResetResult
	var err error
	if res.Messages, err = r.messages("reset", resetRoles); err != nil {
		return ResetResult{}, err
	}
	if raw, ok := r.member("tools"); ok {
		if res.Tools, err = parseTools(raw); err != nil {
			return ResetResult{}, err
		}
	}
	return res, nil
}

// stepResult reads a step reply.
func (r reply) stepResult() (StepResult, error) {
	if err := r.check("step"); err != nil {
		return StepResult{}, err
	}
	var res StepResult
	var err error
	if res.Messages, err = r.messages("step", stepRoles); err != nil {
		return StepResult{}, err
	}
	if raw, ok := r.member("reward"); ok {
		if res.Reward, err = parseReward(raw); err != nil {
			return StepResult{}, err
		}
	}
	if raw, ok := r.member("done"); ok {
		if json.Unmarshal(raw, &res.Done) != nil {
			return StepResult{}, fmt.Errorf("\"done\" is %s, not true or false", show(raw))
		}
	}
	if raw, ok := r.member("info"); ok {
		if json.Unmarshal(raw, &res.Info) != nil {
			return StepResult{}, fmt.Errorf("\"info\" is %s, not an object", show(raw))
		}
	}
	return res, nil
}

// closeResult reads a close reply, {} or one that only echoes.
func (r reply) closeResult() error { return r.check("close") }

// messages reads the "messages" member of a kind of reply, whose roles must be among roles.
func (r reply) messages(kind string, roles []string) ([]Message, error) {
	raw, ok := r.member("messages")
	if !ok {
		return nil, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, fmt.Errorf("\"messages\" is %s, not a list", show(raw))
	}
	out := make([]Message, len(list))
	for i, m := range list {
		var err error
		if out[i], err = parseMessage(m, kind, roles); err != nil {
			return nil, fmt.Errorf("\"messages\"[%d]: %w", i, err)
		}
	}
	return out, nil
}

// parseMessage reads a message {"role", "content"}, with "error" on a tool message.
func parseMessage(raw json.RawMessage, kind string, roles []string) (Message, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return Message{}, fmt.Errorf("%s is not an object", show(raw))
	}
	// Other members ("name", "tool_call_id", as OpenAI-style tool messages carry) are ignored.
	var m Message
	if json.Unmarshal(fields["role"], &m.Role) != nil || !slices.Contains(roles, m.Role) {
		return Message{}, fmt.Errorf("\"role\" is %s: a %s reply's messages are %s", orMissing(fields["role"]), kind, quoteAll(roles))
	}
	if json.Unmarshal(fields["content"], &m.Content) != nil || fields["content"] == nil || bytes.Equal(fields["content"], []byte("null")) {
		return Message{}, fmt.Errorf("\"content\" is %s, not a string", orMissing(fields["content"]))
	}
	if raw, ok := fields["error"]; ok {
		if json.Unmarshal(raw, &m.Error) != nil {
			return Message{}, fmt.Errorf("\"error\" is %s, not true or false", show(raw))
		}
		if m.Error && m.Role != "tool" {
			return Message{}, fmt.Errorf("\"error\": true on a %q message: only a tool message reports a failed call", m.Role)
		}
	}
	return m, nil
}

// parseTools reads the "tools" member: OpenAI-style function specs, each
// {"type": "function", "function": {"name": ..., ...}}.
func parseTools(raw json.RawMessage) ([]json.RawMessage, error) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, fmt.Errorf("\"tools\" is %s, not a list", show(raw))
	}
	out := make([]json.RawMessage, len(list)) // [] offers no tools: not nil
	for i, t := range list {
		var spec struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &spec) != nil || spec.Type != "function" || spec.Function.Name == "" {
			return nil, fmt.Errorf("\"tools\"[%d] is %s: want {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}", i, show(t))
		}
		out[i] = t
	}
	return out, nil
}

// parseReward reads the "reward" member, a finite number.
func parseReward(raw json.RawMessage) (float64, error) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
			return 0, fmt.Errorf("\"reward\" is %s, beyond a float64", show(raw))
		}
		return 0, fmt.Errorf("\"reward\" is %s, not a number", show(raw))
	}
	return v, nil
}

// show writes a member's JSON for a message, quoted and cut when long.
func show(raw json.RawMessage) string {
	if len(raw) > 80 {
		return lineproto.Quote(string(raw))
	}
	return string(raw)
}

// orMissing shows a member's JSON, or says it is missing.
func orMissing(raw json.RawMessage) string {
	if raw == nil {
		return "missing"
	}
	return show(raw)
}

// quoteAll lists names quoted: "a", "b" or "c".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
