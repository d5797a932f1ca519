//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rundir"
	"github.com/vkgrad/vkgrad/internal/tfevents"
)

// trainArgs is a quick training run into dir.
func trainArgs(t *testing.T, dir string, extra ...string) []string {
	data := filepath.Join(t.TempDir(), "corpus.txt")
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "sentence %d of a small test corpus, with some words repeated.\n", i)
	}
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return append([]string{"train", "--preset", "gpt2-micro", "--data", data, "--steps", "2", "--batch", "2", "--seq", "16",
		"--sample-tokens", "0", "--val-fraction", "0.3", "--device", "cpu", "-q", "--cache-dir", t.TempDir(), "--run-dir", dir}, extra...)
}

func TestFaultRunDirectoryBelongsToOneRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, err := runCLI(trainArgs(t, dir)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ckpt := filepath.Join(dir, "checkpoint.safetensors")
	first, _ := os.ReadFile(ckpt)
	// A second run into the same directory is refused; the first run's files are untouched.
	_, err := runCLI(trainArgs(t, dir)...)
	if err == nil || !strings.Contains(err.Error(), "already holds a run") || !strings.Contains(err.Error(), "--resume "+dir) || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("a second run into %s: %v", dir, err)
	}
	if now, _ := os.ReadFile(ckpt); string(now) != string(first) {
		t.Fatal("the refused run changed the checkpoint")
	}
	// Another process holding the directory keeps a run out.
	held, err := rundir.Claim(dir, true, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runCLI(trainArgs(t, dir, "--overwrite")...)
	held.Release(false)
	if err == nil || !strings.Contains(err.Error(), "is in use by process") {
		t.Fatalf("a run into a locked directory: %v", err)
	}
	// A crash's temporary files go at the next start; --overwrite replaces the run.
	stale := filepath.Join(dir, ".checkpoint.safetensors"+".vkgrad-tmp-123")
	if err := os.WriteFile(stale, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(trainArgs(t, dir, "--overwrite")...); err != nil {
		t.Fatalf("--overwrite: %v\n%s", err, out)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there (%v)", err)
	}
}

// TestFaultRunDirKeepsUsersTemporaryFiles: a run started in a folder of the user's removes only
// the temporaries vkgrad's own writes of the run's files leave, never the user's look-alikes.
func TestFaultRunDirKeepsUsersTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	users := []string{"notes.json.tmp", "data.jsonl.tmp", ".draft.tmp-1", "config.json.tmp", ".notes.json.vkgrad-tmp-1"}
	stale := []string{".config.json.vkgrad-tmp-1", ".metrics.jsonl.vkgrad-tmp-2", ".checkpoint.safetensors.vkgrad-tmp-3",
		".checkpoint.safetensors.tmp-4294967295"} // the last as vkgrad wrote it before
	for _, n := range append(append([]string{}, users...), stale...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := runCLI(trainArgs(t, dir)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, n := range users {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != "keep me" {
			t.Errorf("the user's %s: %q, %v", n, b, err)
		}
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("stale temporary %s still there (%v)", n, err)
		}
	}
}

func TestFaultFailedRunLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	args := trainArgs(t, dir)
	for i, a := range args {
		if a == "--data" {
			args[i+1] = filepath.Join(t.TempDir(), "missing.txt")
		}
	}
	if _, err := runCLI(args...); err == nil {
		t.Fatal("training on a missing file succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Errorf("a failed run left %s behind: %v", dir, entries)
	}
}

// TestFaultMetricsOnAFullDisk: when metrics cannot be written the run stops with an error that
// says so, instead of finishing with lines missing.
func TestFaultMetricsOnAFullDisk(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	rundir.OpenFile = func(string, int, os.FileMode) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }
	defer func() { rundir.OpenFile = os.OpenFile }()
	dir := filepath.Join(t.TempDir(), "full")
	_, err := runCLI(trainArgs(t, dir)...)
	if err == nil || !strings.Contains(err.Error(), "metrics could not be written") || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("training with metrics on a full disk: %v", err)
	}
}

// TestResumeKeepsTheRunsSettings: a resumed run keeps --save-every, accepts an unchanged
// --batch and refuses a changed one naming the saved value.
func TestResumeKeepsTheRunsSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := trainArgs(t, dir, "--steps", "6", "--save-every", "2", "--stop-at", "2")
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := runCLI("train", "--resume", dir, "--batch", "2", "--stop-at", "4", "--device", "cpu", "-q"); err != nil {
		t.Fatalf("resume with the same --batch: %v\n%s", err, out)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	if !strings.Contains(string(raw), `"save_every": 2`) {
		t.Errorf("--save-every was not carried over:\n%s", raw)
	}
	_, err := runCLI("train", "--resume", dir, "--batch", "4", "--device", "cpu", "-q")
	if err == nil || !strings.Contains(err.Error(), "--batch 4: this run was saved with --batch 2") {
		t.Errorf("resume with another --batch: %v", err)
	}
}

// TestEvalFindsTheRunsDataAnywhere: eval of a run directory from another working directory
// evaluates the run's own data (saved with an absolute path), in a read-only working
// directory too, and refuses that data once it changed.
func TestEvalFindsTheRunsDataAnywhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := trainArgs(t, dir)
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var data, cache string
	for i, a := range args {
		switch a {
		case "--data":
			data = args[i+1]
		case "--cache-dir":
			cache = args[i+1]
		}
	}
	elsewhere := t.TempDir()
	if err := os.Chmod(elsewhere, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	out, err := runCLI("eval", "--model", dir, "--device", "cpu", "-q", "--cache-dir", cache)
	if err != nil || !strings.Contains(out, "validation split") || !strings.Contains(out, data) {
		t.Fatalf("eval from another directory: %v\n%s", err, out)
	}
	f, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one more line\n")
	f.Close()
	if _, err := runCLI("eval", "--model", dir, "--device", "cpu", "-q", "--cache-dir", cache); err == nil || !strings.Contains(err.Error(), "changed since it was trained") {
		t.Errorf("eval of changed data: %v", err)
	}
}

func TestFlagsCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	_, err := runCLI(append(trainArgs(t, filepath.Join(dir, "r")), "--sample-tokens", "5", "--sample-prompt", strings.Repeat("word ", 200))...)
	if err == nil || !strings.Contains(err.Error(), "--sample-prompt is") {
		t.Errorf("a sample prompt longer than the context: %v", err)
	}
	for _, lr := range []string{"Inf", "NaN", "-1"} {
		if _, err := runCLI(append(trainArgs(t, filepath.Join(dir, "r")), "--lr", lr)...); err == nil || !strings.Contains(err.Error(), "--lr") {
			t.Errorf("--lr %s: %v", lr, err)
		}
	}
	if _, err := runCLI("verify", "llmc", "--model", dir, "--state", dir); err == nil || !strings.Contains(err.Error(), "is a directory: give the llm.c file") {
		t.Errorf("verify with a directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r")); !os.IsNotExist(err) {
		t.Error("a refused run left its directory")
	}
}

// TestRunWritesTensorBoardEvents: a run's numbers are also in a TensorBoard event file.
func TestRunWritesTensorBoardEvents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if out, err := runCLI(trainArgs(t, dir)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	files := rundir.EventFiles(dir)
	if len(files) != 1 {
		t.Fatalf("event files %v, want one", files)
	}
	events, err := tfevents.ReadFile(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	losses := map[int64]bool{}
	val := false
	for _, e := range events {
		for _, s := range e.Scalars {
			losses[e.Step] = losses[e.Step] || s.Tag == "loss"
			val = val || s.Tag == "val/val_loss"
		}
	}
	if !losses[1] || !losses[2] || !val {
		t.Errorf("events hold loss at steps %v and validation %v; want steps 1 and 2 and val/val_loss", losses, val)
	}
}
