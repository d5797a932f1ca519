package tasks_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vkgrad/vkgrad/rl/tasks"
)

// ExampleLoadDataset reads a JSONL file with TRL's field names and holds out a share of it.
func ExampleLoadDataset() {
	dir, _ := os.MkdirTemp("", "dataset")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "train.jsonl")
	os.WriteFile(path, []byte(`{"prompt": "2+2=", "answer": "4", "level": "easy"}
{"prompt": "12*12=", "answer": "144", "level": "hard"}
`), 0o644)
	prompts, err := tasks.LoadDataset(path, tasks.DatasetOptions{})
	if err != nil {
		panic(err)
	}
	train, heldOut, err := tasks.SplitHeldOut(prompts, 0, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(train), len(heldOut), prompts[1].Text, prompts[1].Meta["level"])
	// Output: 2 0 12*12= hard
}
