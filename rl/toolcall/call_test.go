package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCallJSON(t *testing.T) {
	calls, _, err := Parse(Hermes, `<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call><tool_call>{"name": nope}</tool_call><tool_call>{"name": "now"}</tool_call>`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"add","arguments":{"a":1}},{"name":null,"raw":"{\"name\": nope}"},{"name":"now","arguments":{}}]`
	if string(b) != want {
		t.Fatalf("marshalled %s\nwant        %s", b, want)
	}
	var back []Call
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		if back[i].Name != calls[i].Name || string(back[i].Arguments) != string(calls[i].Arguments) || back[i].Raw != calls[i].Raw {
			t.Errorf("call %d: %+v back as %+v", i, calls[i], back[i])
		}
	}
	if b, _ := json.Marshal(Call{Name: "f"}); string(b) != `{"name":"f","arguments":{}}` {
		t.Errorf("a call without arguments marshals as %s", b)
	}
}

func TestFaultCallUnmarshal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"name": null}`, `no "raw"`},
		{`{"name": ""}`, `"name" is empty`},
		{`{"name": "f", "arguments": [1]}`, `tool call "f": arguments: want a JSON object`},
		{`{"name": "f", "arguments": "x"}`, `a string that does not hold a JSON object`},
		{`{"name": 3}`, `cannot unmarshal number`},
	} {
		var got Call
		if err := json.Unmarshal([]byte(c.in), &got); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.in, err, c.want)
		}
	}
	var got Call
	if err := json.Unmarshal([]byte(`{"name": "f", "arguments": "{\"x\": [1, 2]}"}`), &got); err != nil || string(got.Arguments) != `{"x":[1,2]}` {
		t.Errorf("arguments given as a string: %+v, %v", got, err)
	}
}
