package tasks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// toolRow is a conversation with two tool-call turns (OpenAI style with string arguments,
// and bare with an object), their tool replies and a final answer.
const toolRow = `{"messages": [` +
	`{"role": "user", "content": "Weather in Paris and Rome?"},` +
	`{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},` +
	`{"role": "tool", "content": "18"},` +
	`{"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]},` +
	`{"role": "tool", "content": "24"},` +
	`{"role": "assistant", "content": "Paris 18, Rome 24."}],` +
	` "tools": %s, "id": 7}`

// Tool calls in both shapes, tool messages and the tools column (a list or a JSON string,
// bare or wrapped) load: the tools reach the chat template wrapped, the RL prompt carries the
// conversation, the tools and the row, and tools are not metadata.
func TestLoadDatasetToolsAndToolCalls(t *testing.T) {
	bare := `{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}`
	wrapped := `{"type": "function", "function": ` + bare + `}`
	asString, _ := json.Marshal("[" + bare + "]")
	path := writeDataset(t,
		strings.Replace(toolRow, "%s", "["+bare+"]", 1),
		strings.Replace(toolRow, "%s", "["+wrapped+"]", 1),
		strings.Replace(toolRow, "%s", string(asString), 1),
	)
	var seen [][]json.RawMessage
	chat := func(m []Message, tools []json.RawMessage) (string, error) {
		seen = append(seen, tools)
		return chatML(m, tools)
	}
	ps, err := LoadDataset(path, DatasetOptions{Chat: chat})
	if err != nil {
		t.Fatal(err)
	}
	wantTool := `{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":{"type":"object"}}}`
	for i, p := range ps {
		if len(seen[i]) != 1 || string(seen[i][0]) != wantTool || len(p.Tools) != 1 || string(p.Tools[0]) != wantTool {
			t.Errorf("row %d: tools rendered %s, kept %s; want [%s]", i, seen[i], p.Tools, wantTool)
		}
		if _, ok := p.Meta["tools"]; ok || p.Meta["id"] != "7" {
			t.Errorf("row %d: metadata %q: want id and no tools", i, p.Meta)
		}
	}
	p := ps[0]
	wantCalls := [][]ToolCall{nil, {{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}, nil,
		{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}}, nil, nil}
	if len(p.Conversation) != 6 || len(p.Messages) != 5 || p.Answer != "Paris 18, Rome 24." {
		t.Fatalf("conversation of %d turns, prompt of %d, answer %q; want 6, 5 and the last turn", len(p.Conversation), len(p.Messages), p.Answer)
	}
	for i, m := range p.Conversation {
		if !reflect.DeepEqual(m.ToolCalls, wantCalls[i]) {
			t.Errorf("turn %d (%s): tool calls %+v, want %+v", i, m.Role, m.ToolCalls, wantCalls[i])
		}
	}
	if p.Conversation[2].Role != "tool" || p.Conversation[2].Content != "18" {
		t.Errorf("tool reply: %+v", p.Conversation[2])
	}
	q, err := p.RL(nil)
	if err != nil {
		t.Fatal(err)
	}
	wantRow := `{"id":7,"messages":[{"content":"Weather in Paris and Rome?","role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"city\": \"Paris\"}","name":"get_weather"},"type":"function"}]},` +
		`{"content":"18","role":"tool"},{"content":"","role":"assistant","tool_calls":[{"arguments":{"city":"Rome"},"name":"get_weather"}]},` +
		`{"content":"24","role":"tool"},{"content":"Paris 18, Rome 24.","role":"assistant"}],` +
		`"tools":[{"description":"Weather.","name":"get_weather","parameters":{"type":"object"}}]}`
	if string(q.Example) != wantRow {
		t.Errorf("row\n%s\nwant\n%s", q.Example, wantRow)
	}
	call := toolcall.Call{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)}
	if len(q.Messages) != 5 || len(q.Conversation) != 6 || !reflect.DeepEqual(q.Messages[3], env.Message{Role: "assistant", ToolCalls: []toolcall.Call{call}}) ||
		len(q.Tools) != 1 || string(q.Tools[0]) != wantTool || q.Text != p.Text {
		t.Errorf("RL prompt: messages %+v, tools %s", q.Messages, q.Tools)
	}
	text, err := LoadDataset(writeDataset(t, `{"prompt": "2+2?", "answer": "4"}`), DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := text[0].RL(nil); q.Messages != nil || q.Conversation != nil || q.Tools != nil || string(q.Example) != `{"answer":"4","prompt":"2+2?"}` {
		t.Errorf("text prompt: %+v", q)
	}
}

// Bad tools and tool calls are refused naming the line and the field.
func TestLoadDatasetToolErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"prompt": "q", "answer": "a", "tools": [{"description": "no name"}]}`, `:1: field "tools": entry 0: the function has no "name"`},
		{`{"prompt": "q", "answer": "a", "tools": [{"type": "function", "function": {"name": ""}}]}`, `:1: field "tools": entry 0: the function has no "name"`},
		{`{"prompt": "q", "answer": "a", "tools": [{"type": "retrieval"}]}`, `field "tools": entry 0: a tool of type "retrieval"`},
		{`{"prompt": "q", "answer": "a", "tools": "not json"}`, `field "tools": want a list of function specs`},
		{`{"prompt": "q", "answer": "a", "tools": [3]}`, `field "tools": entry 0: want a JSON object`},
		{`{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": "{}"}}]}]}`, `:1: field "messages": `},
		{`{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"name": "f", "arguments": "[1]"}]}]}`, `does not hold a JSON object`},
		{`{"messages": [{"role": "user", "content": "q", "tool_calls": [{"name": "f"}]}, {"role": "assistant", "content": "a"}]}`, `message 0 has tool calls but the role "user"`},
	} {
		_, err := LoadDataset(writeDataset(t, c.line), DatasetOptions{Chat: chatML})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.line, err, c.want)
		}
	}
}
