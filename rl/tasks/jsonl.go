package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/rl"
)

// jsonlPrompt is one line of a prompt file.
type jsonlPrompt struct {
	Prompt string            `json:"prompt"`
	Answer string            `json:"answer"`
	Task   string            `json:"task"`
	Meta   map[string]string `json:"meta"`
}

// LoadJSONL reads prompts from a file with one JSON object per line:
//
//	{"prompt": "2 + 3 =", "answer": " 5", "task": "addition", "meta": {"source": "x"}}
//
// "prompt" is required; "task" defaults to "jsonl"; "answer" and "task" are copied into the
// metadata. Blank lines are skipped. Errors name the file and line.
func LoadJSONL(path string) ([]Prompt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prompt file: %w", err)
	}
	defer f.Close()
	var out []Prompt
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var jp jsonlPrompt
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jp); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		if jp.Prompt == "" {
			return nil, fmt.Errorf("%s:%d: field \"prompt\" is missing or empty", path, line)
		}
		if jp.Task == "" {
			jp.Task = "jsonl"
		}
		meta := rl.Meta{}
		for k, v := range jp.Meta {
			meta[k] = v
		}
		meta["task"] = jp.Task
		meta["answer"] = jp.Answer
		out = append(out, Prompt{Task: jp.Task, Text: jp.Prompt, Answer: jp.Answer, Meta: meta})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}
