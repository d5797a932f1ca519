package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2/tokenizer"
)

// toolChatRow is a conversation with two tool calls, their replies and the answer; the tools
// come as Parquet stores them, a JSON string holding the list.
const toolChatRow = `{"messages": [{"role": "user", "content": "Weather in CITY and Rome?"},` +
	`{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"CITY\"}"}}]},` +
	`{"role": "tool", "content": "18"},` +
	`{"role": "assistant", "content": "Now Rome.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]},` +
	`{"role": "tool", "content": "24"},` +
	`{"role": "assistant", "content": "CITY 18, Rome 24."}],` +
	` "tools": "[{\"name\": \"get_weather\", \"description\": \"Weather.\", \"parameters\": {\"type\": \"object\"}}]"}`

func writeToolChatDataset(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	for _, city := range []string{"Oslo", "Lima", "Berlin", "Madrid"} {
		lines = append(lines, strings.ReplaceAll(toolChatRow, "CITY", city))
	}
	p := filepath.Join(dir, "tools.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sft on tool-call conversations trains every assistant turn of a Qwen3-shaped model (more
// loss tokens than the last turn alone, which --last-turn-only keeps) and lowers the loss; a
// GPT-2, without a chat template, refuses the conversations.
func TestSFTTrainsEveryAssistantTurn(t *testing.T) {
	dir := t.TempDir()
	data := writeToolChatDataset(t, dir)
	run := func(name string, steps string, extra ...string) []map[string]any {
		args := append([]string{"sft", "--preset", "qwen3-tiny", "--layers", "1", "--channels", "32", "--heads", "2",
			"--run-dir", filepath.Join(dir, name), "--steps", steps, "--batch", "2", "--lr", "1e-2", "--min-lr", "1e-2", "--warmup", "0",
			"--stop-at-accuracy", "0", "--device", "cpu", "-q", "--dataset", data, "--eval-size", "0"}, extra...)
		if o, err := runCLI(args...); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, o)
		}
		return metricLines(t, filepath.Join(dir, name), "sft")
	}
	all := run("all", "30")
	last := run("last", "1", "--last-turn-only")
	// Every answer is 7 GPT-2 tokens, and so is each turn wherever its city is.
	gpt, err := tokenizer.GPT2()
	if err != nil {
		t.Fatal(err)
	}
	call := func(city string) string {
		return "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + city + "\"}}\n</tool_call><|im_end|>"
	}
	turns := 0
	for _, turn := range []string{call("Oslo"), "Now Rome.\n" + call("Rome"), "<think>\n\n</think>\n\nOslo 18, Rome 24.<|im_end|>"} {
		turns += len(gpt.Encode(turn))
	}
	answer := len(gpt.Encode("Oslo 18, Rome 24."))
	allTokens, lastTokens := int(all[0]["tokens"].(float64)), int(last[0]["tokens"].(float64))
	if allTokens != 2*turns || lastTokens != 2*(answer+1) {
		t.Errorf("loss tokens a step of two examples: %d on every turn, %d on the last only; want %d and %d (the answer and EOS)", allTokens, lastTokens, 2*turns, 2*(answer+1))
	}
	first, end := all[0]["loss"].(float64), all[len(all)-1]["loss"].(float64)
	if !(end < first/2) {
		t.Errorf("loss on every assistant turn %.3f -> %.3f over %d steps: want it halved", first, end, len(all))
	}
	// A GPT-2 has no chat template: its conversations are laid out as its episodes write them,
	// every assistant turn with the EOS trained.
	gpt2Dir := filepath.Join(dir, "gpt2")
	if o, err := runCLI("sft", "--preset", "gpt2-micro", "--run-dir", gpt2Dir, "--steps", "1", "--device", "cpu", "-q", "--dataset", data, "--eval-size", "0"); err != nil {
		t.Errorf("a GPT-2 on conversations: %v\n%s", err, o)
	}
}

// A resumed sft run whose config.json predates last_turn_only trained the final assistant
// turn alone, and goes on doing so; a new run's config says which it does.
func TestSFTResumeKeepsLastTurnOnly(t *testing.T) {
	f := newSFTFlags()
	spec := f.resumeSpec()
	if err := spec.decode(json.RawMessage(`{"steps": 3}`)); err != nil {
		t.Fatal(err)
	}
	if !f.cfg.LastTurnOnly {
		t.Error("a config without last_turn_only resumed training every turn")
	}
	raw, err := json.Marshal(newSFTFlags().cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"last_turn_only":false`) {
		t.Errorf("a new run's config does not say last_turn_only: %s", raw)
	}
}
