package env

import (
	"reflect"
	"strings"
	"testing"
)

// TestProcessReplyRules: each reply breaking a rule gets an error naming the member at fault.
func TestProcessReplyRules(t *testing.T) {
	for _, c := range []struct {
		op, line, want string
	}{
		{"reset", `{"messages": [{"role": "tool", "content": "x"}]}`, `"messages"[0]: "role" is "tool": a reset reply's messages are "system", "user" or "assistant"`},
		{"reset", `{"messages": [{"content": "x"}]}`, `"messages"[0]: "role" is missing`},
		{"reset", `{"messages": [{"role": "user"}]}`, `"messages"[0]: "content" is missing, not a string`},
		{"reset", `{"messages": [{"role": "user", "content": null}]}`, `"messages"[0]: "content" is null, not a string`},
		{"reset", `{"messages": {"role": "user"}}`, `"messages" is {"role": "user"}, not a list`},
		{"reset", `{"messages": ["hi"]}`, `"messages"[0]: "hi" is not an object`},
		{"reset", `{"tools": [{"type": "function", "function": {}}]}`, `"tools"[0] is {"type": "function", "function": {}}: want {"type": "function"`},
		{"reset", `{"tools": {}}`, `"tools" is {}, not a list`},
		{"reset", `{"rewards": 1}`, `unknown member "rewards": a reset reply's members are among "id", "episode", "turn", "error", "messages", "tools", "reward", "done" or "info"`},
		{"step", `{"reward": "1"}`, `"reward" is "1", not a number`},
		{"step", `{"reward": -1e400}`, `"reward" is -1e400, beyond a float64`},
		{"step", `{"done": 1}`, `"done" is 1, not true or false`},
		{"step", `{"info": [1]}`, `"info" is [1], not an object`},
		{"step", `{"messages": [{"role": "tool", "content": "x", "error": "yes"}]}`, `"messages"[0]: "error" is "yes", not true or false`},
		{"step", `{"error": 3}`, `"error" is 3, not a string`},
		{"step", `{"error": "", "reward": 1}`, `the environment reports an error with an empty message`},
		{"close", `{"ok": true}`, `unknown member "ok": a close reply's members are among`},
	} {
		r, err := parseFrame([]byte(c.line), "e1", 0)
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		switch c.op {
		case "reset":
			_, err = r.resetResult()
		case "step":
			_, err = r.stepResult()
		default:
			err = r.closeResult()
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s reply %s: %v\nwant %s...", c.op, c.line, err, c.want)
		}
	}
}

// TestProcessReplyDefaults: members left out or null take their zero values, "tools": null
// keeps the row's tools and "tools": [] offers none.
func TestProcessReplyDefaults(t *testing.T) {
	for line, want := range map[string]string{
		`{}`:                                `{}`,
		`{"messages": null, "tools": null}`: `{}`,
		`{"tools": [], "episode": "e1", "id": 4}`: `{"tools":[]}`,
		`{"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a", "error": false}]}`: `{"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}]}`,
	} {
		r, err := parseFrame([]byte(line), "e1", -1)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.resetResult()
		if err != nil || mustJSON(res) != want {
			t.Errorf("reset reply %s read as %s, %v; want %s", line, mustJSON(res), err, want)
		}
	}
	r, _ := parseFrame([]byte(`{"turn": 0, "reward": -0.25, "info": null, "done": null}`), "e1", 0)
	res, err := r.stepResult()
	if err != nil || res.Reward != -0.25 || res.Done || res.Info != nil || res.Messages != nil {
		t.Errorf("step reply read as %+v, %v", res, err)
	}
}

// TestProcessReplyFrame: what makes the pairing of replies with requests doubtful.
func TestProcessReplyFrame(t *testing.T) {
	for line, want := range map[string]string{
		`[1]`:                       `reply "[1]" is not a JSON object`,
		`null`:                      `reply "null" is not a JSON object (null)`,
		`{"episode": 1}`:            `reply "{\"episode\": 1}" echoes "episode": 1 to a request of episode "e1"`,
		`{"episode": "e2"}`:         `echoes "episode": "e2" to a request of episode "e1"`,
		`{"turn": "3"}`:             `echoes "turn": "3" to a request of turn 3`,
		`{"turn": 4}`:               `echoes "turn": 4 to a request of turn 3`,
		`{"episode": "e1"} {"x":1}`: `is not a JSON object`,
	} {
		if _, err := parseFrame([]byte(line), "e1", 3); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", line, err, want)
		}
	}
	if _, err := parseFrame([]byte(`{"episode": "e1", "turn": 3}`), "e1", 3); err != nil {
		t.Errorf("a reply echoing its request: %v", err)
	}
}

// TestProcessReplyLenient: members a reply of another kind has (an "info" with a reset, a
// "done" with a close) and members of a message beyond role, content and error (OpenAI-style
// "name" and "tool_call_id") are ignored, so an environment written to other conventions runs.
func TestProcessReplyLenient(t *testing.T) {
	r, err := parseFrame([]byte(`{"messages": [{"role": "tool", "content": "42", "name": "calc", "tool_call_id": "c1"}], "done": false, "tools": null}`), "e1", 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.stepResult()
	if err != nil || len(res.Messages) != 1 || !reflect.DeepEqual(res.Messages[0], Message{Role: "tool", Content: "42"}) {
		t.Errorf("step: %+v, %v", res, err)
	}
	for op, line := range map[string]string{"reset": `{"messages": [], "info": {"a": 1}, "reward": 0}`, "close": `{"done": true}`} {
		r, err := parseFrame([]byte(line), "e1", -1)
		if err != nil {
			t.Fatal(err)
		}
		if op == "reset" {
			_, err = r.resetResult()
		} else {
			err = r.closeResult()
		}
		if err != nil {
			t.Errorf("%s reply %s: %v", op, line, err)
		}
	}
}
