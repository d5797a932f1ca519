package llama

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/vkgrad/vkgrad/nn/safetensors"
)

// expected is a fixture directory's expected.json, the fields the tests use.
type expected struct {
	B, T       int
	InputIDs   [][]int `json:"input_ids"`
	Targets    [][]int `json:"targets"`
	LossF64    float64 `json:"loss_f64"`
	GreedyIDs  []int   `json:"greedy_ids"`
	GreedyFrom []int   `json:"greedy_prompt"`

	AdamWLosses []float64 `json:"adamw_losses_f64"`
	AdamWAfter  float64   `json:"adamw_loss_after_f64"`
}

// fixtureDirs lists the model directories under $VKGRAD_LLAMA_FIXTURES (default: testdata).
func fixtureDirs(t *testing.T) []string {
	t.Helper()
	root := os.Getenv("VKGRAD_LLAMA_FIXTURES")
	if root == "" {
		root = "testdata"
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("llama fixtures: %v (set VKGRAD_LLAMA_FIXTURES to a folder of model directories)", err)
	}
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "config.json")); err == nil {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatalf("no model directories (with a config.json) in %s", root)
	}
	return dirs
}

func readExpected(t *testing.T, dir string) (expected, *safetensors.File) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	sf, err := safetensors.Open(filepath.Join(dir, "expected.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Close() })
	return e, sf
}
