package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"

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
// metadata. Blank lines and a leading byte order mark are skipped; invalid UTF-8 is refused.
// Errors name the file and line.
func LoadJSONL(path string) ([]Prompt, error) {
	var out []Prompt
	err := scanLines(path, 16<<20, func(_ int, b []byte) error {
		var jp jsonlPrompt
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&jp); err != nil {
			return err
		}
		if jp.Prompt == "" {
			return fmt.Errorf("field \"prompt\" is missing or empty")
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
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, nil
}
