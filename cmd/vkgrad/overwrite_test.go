//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// replacedRunFiles are the run's files a test compares before and after a replacement.
var replacedRunFiles = []string{"config.json", "metrics.jsonl", "checkpoint.safetensors"}

func readRun(t *testing.T, dir string) map[string]string {
	m := map[string]string{}
	for _, f := range replacedRunFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		m[f] = string(b)
	}
	return m
}

func hiddenReplaced(t *testing.T, dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".*.vkgrad-replaced"))
	return m
}

func withData(args []string, data string) []string {
	args = append([]string{}, args...)
	for i, a := range args {
		if a == "--data" {
			args[i+1] = data
		}
	}
	return args
}

// TestFaultOverwriteKeepsTheOldRunUntilTheNewOneSaves: --overwrite moves the old run's files
// aside; a new run that fails before its first checkpoint puts them back; one that saves
// drops them at that save.
func TestFaultOverwriteKeepsTheOldRunUntilTheNewOneSaves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := trainArgs(t, dir)
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	old := readRun(t, dir)
	// The replacing run fails (its data is missing) before saving: the old run is back.
	_, err := runCLI(withData(append(args, "--overwrite"), filepath.Join(t.TempDir(), "missing.txt"))...)
	if err == nil {
		t.Fatal("a run on missing data succeeded")
	}
	if now := readRun(t, dir); now["checkpoint.safetensors"] != old["checkpoint.safetensors"] || now["config.json"] != old["config.json"] || now["metrics.jsonl"] != old["metrics.jsonl"] {
		t.Fatal("a failed --overwrite run lost the old run's files")
	}
	if h := hiddenReplaced(t, dir); len(h) > 0 {
		t.Fatalf("left %v", h)
	}
	// A run killed before its first save leaves the old files aside and its own config: the
	// next use of the directory (here a resume) puts the old run back.
	for _, f := range replacedRunFiles {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(dir, "."+f+".vkgrad-replaced")); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"half": "written"}`), 0o644)
	if out, err := runCLI("train", "--resume", dir, "--steps", "3", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("resume after a killed --overwrite: %v\n%s", err, out)
	}
	if h := hiddenReplaced(t, dir); len(h) > 0 {
		t.Fatalf("left %v", h)
	}
	old = readRun(t, dir)
	// A replacing run that saves drops the old files at its first save.
	var before, after []string
	afterStepHook = func(_ context.Context, step int) {
		switch step {
		case 1:
			before = hiddenReplaced(t, dir)
		case 2:
			after = hiddenReplaced(t, dir)
		}
	}
	defer func() { afterStepHook = nil }()
	if out, err := runCLI(append(args, "--overwrite", "--steps", "3", "--save-every", "1", "--lr", "1e-5", "--min-lr", "0")...); err != nil {
		t.Fatalf("--overwrite: %v\n%s", err, out)
	}
	if len(before) != len(replacedRunFiles) || len(after) != 0 {
		t.Errorf("old files aside before the first save %v, after it %v", before, after)
	}
	if now := readRun(t, dir); now["checkpoint.safetensors"] == old["checkpoint.safetensors"] || !strings.Contains(now["config.json"], `"lr": 0.00001,`) {
		t.Errorf("the replacing run's files are not its own:\n%s", now["config.json"])
	}
}
