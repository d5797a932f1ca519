package toolcall_test

import (
	"encoding/json"
	"fmt"

	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// A Qwen3 turn: the call in the thinking is not read, the second call is malformed and kept.
func ExampleParse() {
	text := "<think>Maybe <tool_call>{\"name\": \"guess\"}</tool_call>?</think>\n\n" +
		"<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"mul\", \"arguments\": {\"a\": 2,}}\n</tool_call>"
	calls, malformed, err := toolcall.Parse(toolcall.Hermes, text)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(calls)
	fmt.Println(string(b))
	fmt.Println("malformed:", malformed)
	// Output:
	// [{"name":"add","arguments":{"a":2,"b":3}},{"name":null,"raw":"{\"name\": \"mul\", \"arguments\": {\"a\": 2,}}"}]
	// malformed: 1
}
