package env

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// testToolEnv has an adder, a tool that fails, a tool that hangs until cancelled and one that
// panics.
func testToolEnv() *ToolEnv {
	return &ToolEnv{
		Tools: []Tool{
			{
				Name:       "add",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["a","b"]}`),
				Func: func(_ context.Context, args map[string]any) (string, error) {
					a, _ := new(big.Rat).SetString(string(args["a"].(json.Number)))
					b, _ := new(big.Rat).SetString(string(args["b"].(json.Number)))
					return formatRat(a.Add(a, b)), nil
				},
			},
			{Name: "fail", Func: func(context.Context, map[string]any) (string, error) { return "", errors.New("disk on fire") }},
			{Name: "hang", Func: func(ctx context.Context, _ map[string]any) (string, error) { <-ctx.Done(); return "", ctx.Err() }},
			{Name: "boom", Func: func(context.Context, map[string]any) (string, error) { panic("kaboom") }},
		},
		Judge:   func(json.RawMessage, Turn) (float64, error) { return 0.5, nil },
		Timeout: time.Minute, // long, so that a loaded machine cannot time out a quick call
	}
}

func call(name, args string) toolcall.Call {
	return toolcall.Call{Name: name, Arguments: json.RawMessage(args)}
}

func TestFaultToolEnvCalls(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls []toolcall.Call
		want  []string // each tool message's content; "error: ..." marks a failure
	}{
		{"valid", []toolcall.Call{call("add", `{"a":2,"b":3}`)}, []string{"5"}},
		{"integer written as 1.0", []toolcall.Call{call("add", `{"a":2.0,"b":3e0}`)}, []string{"5"}},
		{"large integers stay exact", []toolcall.Call{call("add", `{"a":123456789012345678901234567890,"b":1}`)}, []string{"123456789012345678901234567891"}},
		{"unknown tool", []toolcall.Call{call("mul", `{}`)}, []string{`error: unknown tool "mul"; the tools are add, fail, hang, boom`}},
		{"malformed call", []toolcall.Call{{Raw: `{"name": "add", "arguments": {"a": 2,}}`}}, []string{`error: the tool call did not parse: want {"name": ..., "arguments": {...}}`}},
		{"missing required", []toolcall.Call{call("add", `{"a":2}`)}, []string{`error: tool "add": arguments: required "b" is missing`}},
		{"wrong type", []toolcall.Call{call("add", `{"a":"2","b":3}`)}, []string{`error: tool "add": arguments.a is string, want integer`}},
		{"fraction for an integer", []toolcall.Call{call("add", `{"a":2.5,"b":3}`)}, []string{`error: tool "add": arguments.a is number, want integer`}},
		{"wrong array item", []toolcall.Call{call("add", `{"a":1,"b":3,"tags":["x",7]}`)}, []string{`error: tool "add": arguments.tags[1] is integer, want string`}},
		{"tool error", []toolcall.Call{call("fail", `{}`)}, []string{`error: tool "fail": disk on fire`}},
		{"tool panics", []toolcall.Call{call("boom", `{}`)}, []string{`error: tool "boom": panicked: kaboom`}},
		{"hung tool", []toolcall.Call{call("hang", `{}`)}, []string{`error: tool "hang": no answer within 50ms`}},
		{"several calls", []toolcall.Call{call("add", `{"a":1,"b":1}`), call("fail", `{}`), call("add", `{"a":40,"b":2}`)},
			[]string{"2", `error: tool "fail": disk on fire`, "42"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := testToolEnv()
			if c.name == "hung tool" {
				e.Timeout = 50 * time.Millisecond
			}
			if _, err := e.Reset(context.Background(), nil, 1, 0); err != nil {
				t.Fatal(err)
			}
			r, err := e.Step(context.Background(), Turn{Index: 0, ToolCalls: c.calls})
			if err != nil {
				t.Fatal(err)
			}
			if r.Done || r.Reward != 0 || len(r.Messages) != len(c.want) {
				t.Fatalf("result %+v, want %d messages, not done", r, len(c.want))
			}
			failures := 0
			for i, m := range r.Messages {
				isErr := strings.HasPrefix(c.want[i], "error: ")
				if m.Role != "tool" || m.Content != c.want[i] || m.Error != isErr {
					t.Errorf("message %d: %+v, want tool message %q (error %v)", i, m, c.want[i], isErr)
				}
				if isErr {
					failures++
				}
			}
			if r.ToolFailures() != failures || r.Info["tool_calls"] != len(c.calls) || r.Info["tool_failures"] != failures {
				t.Errorf("counted %d failures, info %v; want %d calls, %d failures", r.ToolFailures(), r.Info, len(c.calls), failures)
			}
		})
	}
}

func TestToolEnvJudgesTheTurnWithoutCalls(t *testing.T) {
	e := testToolEnv()
	var judged Turn
	e.Judge = func(example json.RawMessage, final Turn) (float64, error) {
		if string(example) != `{"answer":"5"}` {
			t.Errorf("judge got row %s", example)
		}
		judged = final
		return 1, nil
	}
	if _, err := e.Reset(context.Background(), json.RawMessage(`{"answer":"5"}`), 1, 0); err != nil {
		t.Fatal(err)
	}
	r, err := e.Step(context.Background(), Turn{Index: 1, Text: "It is 5."})
	if err != nil || !r.Done || r.Reward != 1 || len(r.Messages) != 0 || judged.Text != "It is 5." {
		t.Fatalf("final turn: %+v, %v; judged %+v", r, err, judged)
	}
	if _, err := e.Step(context.Background(), Turn{Index: 2, Text: "more"}); err == nil || !strings.Contains(err.Error(), "turn 2: the episode has ended") {
		t.Errorf("a step after the end: %v", err)
	}
	if _, err := e.Reset(context.Background(), json.RawMessage(`{"answer":"5"}`), 2, 0); err != nil {
		t.Fatal(err)
	}
	if r, err := e.Step(context.Background(), Turn{Text: "5"}); err != nil || !r.Done {
		t.Errorf("a second episode on the same ToolEnv: %+v, %v", r, err)
	}
}

func TestFaultToolEnvWithoutTools(t *testing.T) {
	e := &ToolEnv{Judge: func(json.RawMessage, Turn) (float64, error) { return 0, nil }}
	start, err := e.Reset(context.Background(), nil, 0, 0)
	if err != nil || start.Tools == nil || len(start.Tools) != 0 {
		t.Fatalf("reset %+v, %v: want an empty, non-nil tools list", start, err)
	}
	r, err := e.Step(context.Background(), Turn{ToolCalls: []toolcall.Call{call("f", `{}`)}})
	if err != nil || r.Messages[0].Content != `error: unknown tool "f"; there are no tools` {
		t.Errorf("a call with no tools: %+v, %v", r, err)
	}
}

func TestToolEnvSchemas(t *testing.T) {
	e := &ToolEnv{Tools: []Tool{
		{Name: "add", Description: "Add two numbers.", Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "number"}}}`)},
		{Name: "now", Description: "The time."},
	}}
	s, err := e.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	want := `[{"type":"function","function":{"name":"add","description":"Add two numbers.","parameters":{"type":"object","properties":{"a":{"type":"number"}}}}},` +
		`{"type":"function","function":{"name":"now","description":"The time.","parameters":{"type":"object","properties":{}}}}]`
	if string(b) != want {
		t.Errorf("schemas %s\nwant    %s", b, want)
	}
}

func TestFaultToolEnvBadTools(t *testing.T) {
	f := func(context.Context, map[string]any) (string, error) { return "", nil }
	judge := func(json.RawMessage, Turn) (float64, error) { return 0, nil }
	for _, c := range []struct {
		name string
		e    ToolEnv
		want string
	}{
		{"no judge", ToolEnv{}, "no Judge"},
		{"no name", ToolEnv{Tools: []Tool{{Func: f}}, Judge: judge}, `tool 0 (""): want a name and a Func`},
		{"no func", ToolEnv{Tools: []Tool{{Name: "x"}}, Judge: judge}, `tool 0 ("x"): want a name and a Func`},
		{"twice", ToolEnv{Tools: []Tool{{Name: "x", Func: f}, {Name: "x", Func: f}}, Judge: judge}, `tool "x" is defined twice`},
		{"schema not JSON", ToolEnv{Tools: []Tool{{Name: "x", Func: f, Parameters: json.RawMessage(`{"type":`)}}, Judge: judge}, "tool x parameters: want a JSON schema object"},
		{"unknown type", ToolEnv{Tools: []Tool{{Name: "x", Func: f, Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"int"}}}`)}}, Judge: judge}, `tool x parameters.n: type "int": want one of string, number`},
		{"deep schema", ToolEnv{Tools: []Tool{{Name: "x", Func: f, Parameters: json.RawMessage(strings.Repeat(`{"items":`, 40) + "{}" + strings.Repeat("}", 40))}}, Judge: judge}, "nested deeper than 32"},
	} {
		if _, err := c.e.Reset(context.Background(), nil, 0, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	var e ToolEnv
	if _, err := e.Step(context.Background(), Turn{}); err == nil || !strings.Contains(err.Error(), "Step before Reset") {
		t.Errorf("Step before Reset: %v", err)
	}
}

// An episode's own deadline ends the step with an error rather than a tool message.
func TestFaultToolEnvEpisodeCancelled(t *testing.T) {
	e := testToolEnv()
	if _, err := e.Reset(context.Background(), nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := e.Step(ctx, Turn{Index: 3, ToolCalls: []toolcall.Call{call("hang", `{}`)}})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "turn 3") {
		t.Errorf("error %v, want turn 3's deadline", err)
	}
}

func TestIsInteger(t *testing.T) {
	for n, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.0": true, "1.50": false, "0.5": false, "100e-2": true,
		"100e-3": false, "1.5e1": true, "1.25e1": false, "1e999999999999999999999": true,
		"1e-999999999999999999999": false, "0e-999999999999999999999": true, "123456789012345678901234567890": true,
		"12345678901234567890.5": false, "2E+3": true,
	} {
		if got := isInteger(n); got != want {
			t.Errorf("isInteger(%s) = %v, want %v", n, got, want)
		}
	}
}
