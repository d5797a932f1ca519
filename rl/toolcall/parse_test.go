package toolcall

import (
	"strings"
	"testing"
)

// want is an expected call: a name and compact arguments, or (name "") the raw text.
type want struct{ name, args, raw string }

func checkCalls(t *testing.T, f Format, text string, wantCalls []want) {
	t.Helper()
	calls, malformed, err := Parse(f, text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	if len(calls) != len(wantCalls) {
		t.Fatalf("%q: %d calls %+v, want %d", text, len(calls), calls, len(wantCalls))
	}
	wantMalformed := 0
	for i, w := range wantCalls {
		c := calls[i]
		if w.name == "" {
			wantMalformed++
			if !c.Malformed() || c.Raw != w.raw || c.Arguments != nil {
				t.Errorf("%q call %d: %+v, want malformed with raw %q", text, i, c, w.raw)
			}
		} else if c.Name != w.name || string(c.Arguments) != w.args || c.Raw != "" {
			t.Errorf("%q call %d: name %q arguments %s raw %q, want %q %s", text, i, c.Name, c.Arguments, c.Raw, w.name, w.args)
		}
		if c.Start < 0 || c.Start > c.End || c.End > len(text) || (i > 0 && c.Start < calls[i-1].End) {
			t.Errorf("%q call %d: range [%d, %d) out of order or outside the text", text, i, c.Start, c.End)
		}
	}
	if malformed != wantMalformed {
		t.Errorf("%q: %d malformed, want %d", text, malformed, wantMalformed)
	}
}

func TestParseHermes(t *testing.T) {
	weather := want{name: "get_weather", args: `{"city":"Paris"}`}
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	cases := []struct {
		name string
		text string
		want []want
	}{
		{"no call", "The answer is 4.", nil},
		{"one call after text", "Let me check.\n" + call, []want{weather}},
		{"several calls", call + "\n" + strings.Replace(call, "Paris", "Oslo", 1) + "\n" +
			`<tool_call>{"name": "add", "arguments": {"a": 1, "b": [2, 3]}}</tool_call>`,
			[]want{weather, {name: "get_weather", args: `{"city":"Oslo"}`}, {name: "add", args: `{"a":1,"b":[2,3]}`}}},
		{"fake call in thinking", "<think>I could write <tool_call>{\"name\": \"fake\", \"arguments\": {}}</tool_call></think>\n\n" + call,
			[]want{weather}},
		{"only after the last </think>", "<think>a</think><tool_call>{\"name\": \"early\"}</tool_call><think>b</think>" + call,
			[]want{weather}},
		{"thinking opened in the prompt", "so I call it.</think>\n\n" + call, []want{weather}},
		{"unclosed thinking is not read", call + "<think>maybe <tool_call>{\"name\": \"fake\"}</tool_call>", []want{weather}},
		{"malformed JSON", `<tool_call>{"name": "x", "arguments": {"a": 1}</tool_call>` + call,
			[]want{{raw: `{"name": "x", "arguments": {"a": 1}`}, weather}},
		{"unterminated tag", "<tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n", []want{{raw: `{"name": "x", "arguments": {}}`}}},
		{"unterminated tag before another call", `<tool_call>{"name": "a"` + call, []want{{raw: `{"name": "a"`}, weather}},
		{"empty call", "<tool_call></tool_call>", []want{{raw: ""}}},
		{"text after the object", `<tool_call>{"name": "a", "arguments": {}} thanks</tool_call>`,
			[]want{{raw: `{"name": "a", "arguments": {}} thanks`}}},
		{"not an object", "<tool_call>[1, 2]</tool_call>", []want{{raw: "[1, 2]"}}},
		{"stray closing tag", "done </tool_call>", nil},
		{"braces and tags inside strings", `<tool_call>{"name": "echo", "arguments": {"s": "}{ \"</tool_call>\" {{", "t": "<tool_call>"}}</tool_call>`,
			[]want{{name: "echo", args: `{"s":"}{ \"</tool_call>\" {{","t":"<tool_call>"}`}}},
		{"unicode", `<tool_call>{"name": "天气", "arguments": {"city": "Zürich 🌧", "note": "\u00e9"}}</tool_call>`,
			[]want{{name: "天气", args: `{"city":"Zürich 🌧","note":"\u00e9"}`}}},
		{"arguments as a JSON string", `<tool_call>{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}</tool_call>`,
			[]want{weather}},
		{"arguments string without an object", `<tool_call>{"name": "f", "arguments": "Paris"}</tool_call>`,
			[]want{{raw: `{"name": "f", "arguments": "Paris"}`}}},
		{"no arguments", `<tool_call>{"name": "now"}</tool_call>`, []want{{name: "now", args: "{}"}}},
		{"null arguments", `<tool_call>{"name": "now", "arguments": null}</tool_call>`, []want{{name: "now", args: "{}"}}},
		{"arguments an array", `<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, []want{{raw: `{"name": "f", "arguments": [1]}`}}},
		{"no name", `<tool_call>{"arguments": {}}</tool_call>`, []want{{raw: `{"arguments": {}}`}}},
		{"empty name", `<tool_call>{"name": "", "arguments": {}}</tool_call>`, []want{{raw: `{"name": "", "arguments": {}}`}}},
		{"name not a string", `<tool_call>{"name": 3, "arguments": {}}</tool_call>`, []want{{raw: `{"name": 3, "arguments": {}}`}}},
		{"name twice", `<tool_call>{"name": "a", "name": "b"}</tool_call>`, []want{{raw: `{"name": "a", "name": "b"}`}}},
		{"Llama's key in a Hermes call", `<tool_call>{"name": "f", "parameters": {"x": 1}}</tool_call>`,
			[]want{{raw: `{"name": "f", "parameters": {"x": 1}}`}}},
		{"escaped key", `<tool_call>{"n\u0061me": "f", "arguments": {}}</tool_call>`, []want{{name: "f", args: "{}"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkCalls(t, Hermes, c.text, c.want) })
	}
}

func TestParseLlama31(t *testing.T) {
	weather := want{name: "get_weather", args: `{"city":"Paris"}`}
	call := `{"name": "get_weather", "parameters": {"city": "Paris"}}`
	cases := []struct {
		name string
		text string
		want []want
	}{
		{"plain answer", "It is sunny in Paris.", nil},
		{"whole-turn call", call, []want{weather}},
		{"white space around", "\n  " + call + "\n", []want{weather}},
		{"python tag", "<|python_tag|>" + call, []want{weather}},
		{"arguments key", `{"name": "get_weather", "arguments": {"city": "Paris"}}`, []want{weather}},
		{"both keys", `{"name": "f", "parameters": {}, "arguments": {}}`, []want{{raw: `{"name": "f", "parameters": {}, "arguments": {}}`}}},
		{"parameters as a JSON string", `{"name": "get_weather", "parameters": "{\"city\": \"Paris\"}"}`, []want{weather}},
		{"text after the call", call + " Done.", []want{{raw: call + " Done."}}},
		{"two calls", call + "; " + call, []want{{raw: call + "; " + call}}},
		{"built-in tool code", `<|python_tag|>brave_search.call(query="x")`, []want{{raw: `brave_search.call(query="x")`}}},
		{"python tag alone", "<|python_tag|>", []want{{raw: ""}}},
		{"malformed JSON", `{"name": "f", "parameters": {`, []want{{raw: `{"name": "f", "parameters": {`}}},
		{"thinking skipped", `<think>{"name": "fake", "parameters": {}}</think>` + call, []want{weather}},
		{"Hermes tags are text", "<tool_call>" + call + "</tool_call>", nil},
		{"unicode", `{"name": "météo", "parameters": {"ville": "Zürich 🌧"}}`, []want{{name: "météo", args: `{"ville":"Zürich 🌧"}`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkCalls(t, Llama31, c.text, c.want) })
	}
}

// A call's range covers its tags, so a caller can point at it in the text.
func TestParseCallRange(t *testing.T) {
	text := "ok <tool_call>{\"name\": \"a\"}</tool_call>\n<tool_call>{bad</tool_call>"
	calls, _, err := Parse(Hermes, text)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{text[calls[0].Start:calls[0].End], text[calls[1].Start:calls[1].End]}
	if got[0] != `<tool_call>{"name": "a"}</tool_call>` || got[1] != "<tool_call>{bad</tool_call>" {
		t.Errorf("ranges cover %q", got)
	}
	calls, _, err = Parse(Llama31, " <|python_tag|>{\"name\": \"a\"} \n")
	if err != nil || len(calls) != 1 || calls[0].Start != 1 || calls[0].End != 28 {
		t.Errorf("Llama range: %+v %v", calls, err)
	}
}

func TestFaultParseUnknownFormat(t *testing.T) {
	if _, _, err := Parse("mistral", "[TOOL_CALLS]"); err == nil || !strings.Contains(err.Error(), `"mistral"`) {
		t.Errorf("error %v, want one naming the format", err)
	}
	if _, err := SchemaSpans("", "x"); err == nil {
		t.Error("SchemaSpans accepted an empty format")
	}
	if f, err := ParseFormat("llama3_json"); err != nil || f != Llama31 {
		t.Errorf("ParseFormat(llama3_json) = %q, %v", f, err)
	}
}
