package env

import (
	"encoding/json"
	"testing"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// The types read and write the environment protocol's JSON.
func TestProtocolJSON(t *testing.T) {
	calls, _, _ := toolcall.Parse(toolcall.Hermes, `<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call><tool_call>{oops}</tool_call>`)
	b, _ := json.Marshal(Turn{Index: 2, Text: "t", Truncated: true, ToolCalls: calls})
	if want := `{"turn":2,"text":"t","truncated":true,"tool_calls":[{"name":"f","arguments":{"x":1}},{"name":null,"raw":"{oops}"}]}`; string(b) != want {
		t.Errorf("turn %s\nwant %s", b, want)
	}

	for in, want := range map[string]string{
		`{}`:              `{}`,
		`{"tools": null}`: `{}`,
		`{"tools": []}`:   `{"tools":[]}`,
		`{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}`: `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,
	} {
		var r ResetResult
		if err := json.Unmarshal([]byte(in), &r); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(r); string(b) != want {
			t.Errorf("reset reply %s back as %s, want %s", in, b, want)
		}
	}

	var r StepResult
	in := `{"messages": [{"role": "tool", "content": "boom", "error": true}, {"role": "tool", "content": "ok"}], "reward": 0.5, "done": false, "info": {"k": "v"}}`
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.ToolFailures() != 1 || r.Reward != 0.5 || r.Info["k"] != "v" || r.Messages[1].Content != "ok" {
		t.Errorf("step reply %s read as %+v", in, r)
	}
}
