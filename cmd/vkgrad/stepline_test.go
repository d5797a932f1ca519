package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/vkgrad/vkgrad/internal/plot"
	"github.com/vkgrad/vkgrad/internal/testutil"
)

// The step lines of `train` and `sft` hold the same quantities under the same names, float32
// values alike; train adds its throughput.
func TestTrainAndSFTStepLinesShareNames(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "corpus.txt")
	var text bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&text, "line %d: the quick brown fox jumps over the lazy dog.\n", i)
	}
	if err := os.WriteFile(data, text.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	trainDir := filepath.Join(dir, "train")
	if out, err := runCLI("train", "--preset", "gpt2-micro", "--data", data, "--steps", "2", "--batch", "2", "--seq", "16", "--device", "cpu",
		"--sample-tokens", "0", "--val-fraction", "0", "-q", "--run-dir", trainDir); err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	sft := tinySFT(t, dir)
	trainLine, sftLine := metricLines(t, trainDir, "train")[0], metricLines(t, sft, "sft")[0]
	delete(trainLine, "tok_per_s")
	if tk, sk := slices.Sorted(maps.Keys(trainLine)), slices.Sorted(maps.Keys(sftLine)); !slices.Equal(tk, sk) {
		t.Errorf("train's step line has %v, sft's %v", tk, sk)
	}
	for _, k := range []string{"loss", "learning_rate", "grad_norm"} {
		for kind, line := range map[string]map[string]any{"train": trainLine, "sft": sftLine} {
			if v, _ := line[k].(float64); v == 0 || !float32Text(v) {
				t.Errorf("%s %s %v: want a float32 value's shortest text", kind, k, line[k])
			}
		}
	}
	if v, _ := sftLine["tokens"].(float64); v != float64(int(v)) || v <= 0 {
		t.Errorf("sft tokens %v: want the count of tokens its loss counts", sftLine["tokens"])
	}
}

// An sft run whose lines name the loss's token count loss_tokens (as runs did before they
// shared train's names) resumes, and its curves read both halves.
func TestSFTResumeOfARunWithOldNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sft")
	args := append([]string{"sft", "--run-dir", dir, "--steps", "4", "--batch", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, rlCommon...)
	if out, err := runCLI(append(args, "--stop-at", "2")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	path := filepath.Join(dir, "metrics.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.ReplaceAll(raw, []byte(`"tokens":`), []byte(`"loss_tokens":`))
	if bytes.Equal(old, raw) {
		t.Fatal("no tokens to rename")
	}
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(append([]string{"sft", "--resume", dir}, rlCommon...)...); err != nil {
		t.Fatalf("resuming: %v\n%s", err, out)
	}
	if n := len(metricLines(t, dir, "sft")); n != 4 {
		t.Fatalf("%d step lines after the resume, want 4", n)
	}
	run, err := plot.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Series["loss"]) < 4 || len(run.Series["loss_tokens"]) != 2 || len(run.Series["tokens"]) != 2 {
		t.Errorf("curves: %d loss points, %d loss_tokens, %d tokens; want 4+, 2 and 2", len(run.Series["loss"]), len(run.Series["loss_tokens"]), len(run.Series["tokens"]))
	}
}

// float32Text reports whether v reads back from the shortest text of a float32.
func float32Text(v float64) bool {
	back, err := strconv.ParseFloat(strconv.FormatFloat(float64(float32(v)), 'g', -1, 32), 64)
	return err == nil && back == v
}

// Under MPI, sft's step lines carry the step's traffic as train's do.
func TestSFTStepLinesOnTwoRanksCarryTheTraffic(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range testutil.MPILaunchers(t) {
		dir := filepath.Join(t.TempDir(), l.Name)
		args := []string{"sft", "--steps", "2", "--batch", "4", "--micro-batch", "2", "--max-digits", "1", "--min-digits", "1",
			"--held-out-fraction", "0.3", "--eval-size", "4", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--run-dir", dir}
		if out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s -np 2: %v\n%s", l.Name, err, out)
		}
		lines := metricLines(t, dir, "sft")
		if len(lines) != 2 {
			t.Fatalf("%s: %d step lines, want 2", l.Name, len(lines))
		}
		for _, line := range lines {
			b, _ := line["comm_bytes"].(float64)
			s, _ := line["comm_seconds"].(float64)
			if !(b > 0) || !(s > 0) {
				t.Errorf("%s -np 2: a step line without its MPI traffic: %v", l.Name, line)
			}
		}
	}
}
