package rl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rundir"
)

// Run with a run directory: cancelled after step 3 (as Ctrl-C does), it leaves a checkpoint and
// three metric lines; resumed, it finishes with the parameters of an uninterrupted run, bit
// for bit, and one metric line per step.
func TestGRPORunCancelAndResume(t *testing.T) {
	straight := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.Steps = 6 })
	if err := straight.Run(context.Background(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want, _ := paramsToHost(straight.Policy())

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	first := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.Steps = 6 })
	var progress strings.Builder
	err := first.Run(ctx, RunOptions{Dir: dir, SaveEvery: 2, Progress: &progress, OnStep: func(step int, _ map[string]float64) error {
		if step == 3 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || first.Steps() != 3 {
		t.Fatalf("cancelled run: %v after %d steps", err, first.Steps())
	}
	if !strings.Contains(progress.String(), "step 3 | loss") || !strings.Contains(progress.String(), "reward") {
		t.Errorf("progress lines: %q", progress.String())
	}
	if err := toyGRPO(t, nil).Run(context.Background(), RunOptions{Dir: dir}); err == nil {
		t.Fatal("a second run into the directory without Resume was not refused")
	}
	second := toyGRPO(t, func(c *GRPOTrainerConfig) { c.Train.Steps = 6 })
	if err := second.Run(context.Background(), RunOptions{Dir: dir, Resume: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := paramsToHost(second.Policy())
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("parameter %d: %v resumed, %v straight", i, got[i], want[i])
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, rundir.Metrics))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], `{"step":6,`) {
		t.Fatalf("metrics.jsonl has %d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}
