package toolcall

import (
	"reflect"
	"testing"
)

// forced returns the text of each span.
func forced(t *testing.T, f Format, text string) []string {
	t.Helper()
	spans, err := SchemaSpans(f, text)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range spans {
		out = append(out, text[s.Start:s.End])
	}
	return out
}

func TestSchemaSpans(t *testing.T) {
	cases := []struct {
		name string
		f    Format
		text string
		want []string
	}{
		{"Qwen's layout", Hermes,
			"Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			[]string{"<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>"}},
		{"two calls apart", Hermes,
			`<tool_call>{"name":"a","arguments":{}}</tool_call>` + "\n" + `<tool_call>{"arguments":{"x":"}"},"name":"b"}</tool_call>`,
			[]string{`<tool_call>{"name":"`, `","arguments":`, `}</tool_call>`, `<tool_call>{"arguments":`, `,"name":"`, `"}</tool_call>`}},
		{"adjacent calls stay apart", Hermes, `<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}</tool_call>`,
			[]string{`<tool_call>{"name":"`, `"}</tool_call>`, `<tool_call>{"name":"`, `"}</tool_call>`}},
		{"no arguments", Hermes, `<tool_call>{"name": "now"}</tool_call>`, []string{`<tool_call>{"name": "`, `"}</tool_call>`}},
		{"arguments as a string", Hermes, `<tool_call>{"name": "f", "arguments": "{\"x\": 1}"}</tool_call>`,
			[]string{`<tool_call>{"name": "`, `", "arguments": `, `}</tool_call>`}},
		{"unicode name", Hermes, `<tool_call>{"name": "天气", "arguments": {}}</tool_call>`,
			[]string{`<tool_call>{"name": "`, `", "arguments": `, `}</tool_call>`}},
		{"thinking and malformed calls have none", Hermes,
			`<think><tool_call>{"name": "fake", "arguments": {}}</tool_call></think><tool_call>{"name": 1}</tool_call>`, nil},
		{"Llama 3.1", Llama31, `<|python_tag|>{"name": "f", "parameters": {"x": 1}}`,
			[]string{`<|python_tag|>{"name": "`, `", "parameters": `, `}`}},
		{"Llama 3.1 without the tag", Llama31, "\n{\"name\": \"f\", \"parameters\": {}}\n",
			[]string{`{"name": "`, `", "parameters": `, `}`}},
		{"Llama 3.1 answer", Llama31, "Paris.", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := forced(t, c.f, c.text); !reflect.DeepEqual(got, c.want) {
				t.Errorf("spans %q, want %q", got, c.want)
			}
		})
	}
}

// Spans are byte offsets into the text as given, thinking and text before the calls included.
func TestSchemaSpansOffsets(t *testing.T) {
	text := "<think>é</think>ok <tool_call>{\"name\": \"a\"}</tool_call>"
	spans, err := SchemaSpans(Hermes, text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Span{{20, 41}, {42, 56}}
	if !reflect.DeepEqual(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
}
