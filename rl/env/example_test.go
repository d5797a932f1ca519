package env_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vkgrad/vkgrad/rl/env"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// An episode of the built-in calculator, its turns written by hand where a policy would sample.
func Example() {
	ctx := context.Background()
	newEnv, _ := env.Lookup("calculator")
	e, _ := newEnv()
	defer e.Close()
	e.Reset(ctx, json.RawMessage(`{"prompt": "What is 987654321 * 123456789?", "answer": 121932631112635269}`), 1, 0)
	for i, text := range []string{
		`<tool_call>{"name": "calculate", "arguments": {"expression": "987654321 * 123456789"}}</tool_call>`,
		"It is 121932631112635269.",
	} {
		calls, _, _ := toolcall.Parse(toolcall.Hermes, text)
		r, _ := e.Step(ctx, env.Turn{Index: i, Text: text, ToolCalls: calls})
		reply, _ := json.Marshal(r)
		fmt.Println(string(reply))
	}
	// Output:
	// {"messages":[{"role":"tool","content":"121932631112635269"}],"reward":0,"done":false,"info":{"tool_calls":1,"tool_failures":0}}
	// {"reward":1,"done":true,"info":{"tool_calls":0,"tool_failures":0}}
}
