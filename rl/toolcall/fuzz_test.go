package toolcall

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks, on any text in either format, that parsing does not panic, that calls and
// spans lie within the text in order, that spans fall inside calls that parsed, and that every
// call survives the protocol's JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		`<think><tool_call>{"name": "fake"}</tool_call></think><tool_call>{"name": "a", "arguments": "{\"x\": 1}"}</tool_call>`,
		`<tool_call>{"name": "x", "arguments": {"a": 1}</tool_call><tool_call>{"name": "a"`,
		`<tool_call>{"name": "echo", "arguments": {"s": "}{ \"</tool_call>\" {{"}}</tool_call>`,
		`<tool_call>{"name": "天气", "arguments": {"city": "Zürich 🌧"}}</tool_call>`,
		`<|python_tag|>{"name": "f", "parameters": {"x": 1}}`,
		`{"name": "f", "parameters": {}} more`,
		"<tool_call></tool_call><think>",
		`<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call>`,
		"<tool_call>{\"name\":\"a\",\"arguments\":{\"b\":\"\xff\"}}</tool_call>",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, llama bool) {
		format := Hermes
		if llama {
			format = Llama31
		}
		calls, malformed, err := Parse(format, text)
		if err != nil {
			t.Fatal(err)
		}
		checkFuzzCalls(t, text, calls, malformed)
		spans, err := SchemaSpans(format, text)
		if err != nil {
			t.Fatal(err)
		}
		checkFuzzSpans(t, text, calls, spans)
	})
}

func checkFuzzCalls(t *testing.T, text string, calls []Call, malformed int) {
	lo, _ := readable(text)
	n, prevEnd := 0, lo
	for i, c := range calls {
		if c.Start < prevEnd || c.End < c.Start || c.End > len(text) {
			t.Fatalf("call %d range [%d, %d): after %d, within %d bytes wanted", i, c.Start, c.End, prevEnd, len(text))
		}
		prevEnd = c.End
		if c.Malformed() {
			n++
			if c.Arguments != nil {
				t.Fatalf("malformed call %d has arguments %s", i, c.Arguments)
			}
		} else if c.Raw != "" || !json.Valid(c.Arguments) || !strings.HasPrefix(string(c.Arguments), "{") {
			t.Fatalf("call %d: %+v", i, c)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		var back Call
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("call %d as %s: %v", i, b, err)
		}
		if utf8.ValidString(c.Name) && utf8.ValidString(c.Raw) && (back.Name != c.Name || back.Raw != c.Raw) {
			t.Fatalf("call %d: %+v back as %+v", i, c, back)
		}
	}
	if n != malformed {
		t.Fatalf("%d malformed calls, counted %d", n, malformed)
	}
}

func checkFuzzSpans(t *testing.T, text string, calls []Call, spans []Span) {
	prevEnd := 0
	for i, s := range spans {
		if s.Start < prevEnd || s.End <= s.Start || s.End > len(text) {
			t.Fatalf("span %d [%d, %d): after %d, non-empty, within %d bytes wanted", i, s.Start, s.End, prevEnd, len(text))
		}
		prevEnd = s.End
		inside := false // within one call that parsed, never straddling two
		for _, c := range calls {
			inside = inside || (!c.Malformed() && c.Start <= s.Start && s.End <= c.End)
		}
		if !inside {
			t.Fatalf("span %d [%d, %d) lies in no call that parsed", i, s.Start, s.End)
		}
	}
}
