package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// TestBenchTrainDataParallel: `mpirun -np 2 vkgrad bench train` trains on both ranks and rank 0
// alone reports the job: two micro-batches' tokens a step, and 4 bytes a parameter sent to the
// other rank (its half of its gradient, then its reduced half).
func TestBenchTrainDataParallel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := gpt2.Preset("gpt2-micro")
	for _, l := range testutil.MPILaunchers(t) {
		out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, "bench", "train", "--preset", "gpt2-micro", "--device", "cpu",
			"--threads", "1", "--batch", "1", "--seq", "8", "--steps", "2", "--warmup", "1", "--json", "-q").Output()
		if err != nil {
			t.Fatalf("%s -np 2: %v\n%s", l.Name, err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var rep map[string]any
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rep) != nil {
			t.Fatalf("%s -np 2: want one JSON report (rank 0's), got\n%s", l.Name, out)
		}
		if w, ok := rep["comm_wait_seconds_per_step"].(float64); !ok || w < 0 {
			t.Errorf("%s -np 2: comm_wait_seconds_per_step %v", l.Name, rep["comm_wait_seconds_per_step"])
		}
		perRank := 8 / (rep["ms_per_step"].(float64) / 1e3)
		if rep["ranks"] != 2.0 || rep["comm_bytes_per_step"] != float64(4*cfg.NumParams()) || !(rep["comm_seconds_per_step"].(float64) > 0) ||
			rep["tokens_per_s"].(float64) < 1.99*perRank || rep["tokens_per_s"].(float64) > 2.01*perRank {
			t.Errorf("%s -np 2: report %v, want 2 ranks, %d bytes a step and both ranks' tokens", l.Name, rep, 4*cfg.NumParams())
		}
	}
}
