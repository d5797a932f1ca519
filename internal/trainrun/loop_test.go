package trainrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// tinyTrainer is a one-layer GPT-2 of a 64-token vocabulary over a patterned corpus.
func tinyTrainer(t *testing.T, steps int) *train.Trainer {
	t.Helper()
	m, err := gpt2.New(cpu.New(), gpt2.Config{MaxSeqLen: 16, VocabSize: 64, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 16})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.InitRandom(1); err != nil {
		t.Fatal(err)
	}
	tokens := make([]int32, 20000)
	for i := range tokens {
		tokens[i] = int32(i*7%61 + i%3)
	}
	cfg := train.DefaultConfig()
	cfg.Batch, cfg.Seq, cfg.Steps, cfg.ValBatches, cfg.ValFraction = 2, 8, steps, 2, 0.25
	cfg.MicroBatches, cfg.OnNonFinite, cfg.MaxSkips, cfg.Precision = 1, "skip", train.DefaultMaxSkips, "fp32"
	tr, err := train.New(nn.GPT2(m), cfg, tokens, "patterned tokens")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// metricLines are the kind and step of each line of dir's metrics.
func metricLines(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, rundir.Metrics))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m struct {
			Kind string `json:"kind"`
			Step int    `json:"step"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %d", m.Kind, m.Step))
	}
	return got
}

// A run paused at StopAt saves and is not finished; the same loop continued reaches the last
// step, validating before (each invocation) and after, with one metrics line per step.
func TestLoopPauseAndFinish(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	held, err := rundir.Claim(dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(false)
	metricsOut, _, err := rundir.OpenMetrics(dir, false, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer metricsOut.Close()
	tr := tinyTrainer(t, 4)
	l := &Loop{Trainer: tr, Last: 4, RunDir: dir, Main: true, Log: zerolog.Nop(), Metrics: zerolog.New(metricsOut),
		MetricsOut: metricsOut, Held: held, StopAt: 2, Progress: io.Discard}
	res, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished || tr.Step != 2 || res.Tokens != 2*2*8 || math.IsNaN(float64(res.FirstVal)) {
		t.Errorf("paused run: finished %v at step %d, %d tokens, first validation %v; want unfinished at 2, 32 tokens, a loss",
			res.Finished, tr.Step, res.Tokens, res.FirstVal)
	}
	if _, err := os.Stat(l.CheckpointPath()); err != nil {
		t.Errorf("paused run saved no checkpoint: %v", err)
	}
	l.StopAt = 0
	if res, err = l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !res.Finished || tr.Step != 4 || res.Tokens != 32 || math.IsNaN(float64(res.FinalVal)) {
		t.Errorf("continued run: finished %v at step %d, %d tokens, final validation %v; want finished at 4, 32 tokens, a loss",
			res.Finished, tr.Step, res.Tokens, res.FinalVal)
	}
	want := []string{"val 0", "train 1", "train 2", "val 2", "train 3", "train 4", "val 4"}
	if got := metricLines(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("metrics lines %v, want %v", got, want)
	}
}

// A rank other than 0 trains but neither validates nor saves.
func TestLoopOtherRank(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	tr := tinyTrainer(t, 2)
	l := &Loop{Trainer: tr, Last: 2, RunDir: dir, Log: zerolog.Nop(), Metrics: zerolog.Nop(), Progress: io.Discard}
	res, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished || tr.Step != 2 || !math.IsNaN(float64(res.FirstVal)) || !math.IsNaN(float64(res.FinalVal)) {
		t.Errorf("rank 1: finished %v at step %d, validation %v -> %v; want finished at 2 with NaN losses", res.Finished, tr.Step, res.FirstVal, res.FinalVal)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("rank 1 wrote its run directory (%v)", err)
	}
}
