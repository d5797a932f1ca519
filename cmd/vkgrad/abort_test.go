//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// jobEndsWithin is how long a job may take to end once a rank failed. The job aborts within
// seconds; the rest is room for a step on a loaded machine.
const jobEndsWithin = time.Minute

// TestFaultCheckpointFailsOnRankZero: when rank 0 cannot write its checkpoint mid-run (a
// directory now stands where it goes), `mpirun -np 2 vkgrad train|sft|grpo|ppo` ends within
// seconds with rank 0's error on stderr, under each installed MPI. Rank 0 used to wait in
// MPI_Finalize, and rank 1 in the next step's collective, forever.
func TestFaultCheckpointFailsOnRankZero(t *testing.T) {
	launchers := testutil.MPILaunchers(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "corpus.txt")
	var text bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&text, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i, i%7)
	}
	if err := os.WriteFile(data, text.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sft := tinySFT(t, dir)
	commands := map[string][]string{
		"train": {"train", "--preset", "gpt2-micro", "--data", data, "--batch", "2", "--seq", "16", "--micro-batches", "2",
			"--sample-tokens", "0", "--val-every", "0"},
		"sft": {"sft", "--batch", "4", "--micro-batch", "2", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3",
			"--eval-size", "4", "--stop-at-accuracy", "0"},
		"grpo": {"grpo", "--init", sft, "--prompts", "2", "--group-size", "2", "--micro-batch", "2", "--max-new-tokens", "4", "--eval-size", "0"},
		"ppo":  {"ppo", "--init", sft, "--prompts", "2", "--group-size", "2", "--micro-batch", "1", "--max-new-tokens", "4", "--eval-size", "0"},
	}
	for _, l := range launchers {
		for _, name := range []string{"train", "sft", "grpo", "ppo"} {
			runDir := filepath.Join(dir, l.Name+"-"+name)
			args := append(commands[name], "--steps", "1000", "--save-every", "1", "--device", "cpu", "-q", "--run-dir", runDir)
			out, took, err := failCheckpointOnRankZero(t, l, runDir, args)
			t.Logf("%s %s: ended %v after the checkpoint was blocked", l.Name, name, took.Round(time.Millisecond))
			if err == nil {
				t.Errorf("%s %s: the job succeeded though rank 0 could not save:\n%s", l.Name, name, out)
			}
			if !strings.Contains(out, "vkgrad: rank 0 of 2: checkpoint: saving") {
				t.Errorf("%s %s: rank 0's error is not on stderr:\n%s", l.Name, name, out)
			}
		}
	}
}

// failCheckpointOnRankZero starts args as a 2-rank job of l, makes rank 0's next checkpoint
// fail once it has saved one, and returns the job's output, how long it took to end from then,
// and its error. A job still running after jobEndsWithin fails the test.
func failCheckpointOnRankZero(t *testing.T, l testutil.Launcher, runDir string, args []string) (string, time.Duration, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ckpt := filepath.Join(runDir, "checkpoint.safetensors")
	for first := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the job ended before its first checkpoint: %v\n%s", l.Name, err, &out)
		default:
		}
		if time.Since(first) > 3*time.Minute {
			stopJob(cmd, done)
			t.Fatalf("%s: no checkpoint after 3 minutes\n%s", l.Name, &out)
		}
	}
	blockPath(t, ckpt)
	blocked := time.Now()
	select {
	case err := <-done:
		return out.String(), time.Since(blocked), err
	case <-time.After(jobEndsWithin):
		stopJob(cmd, done)
		t.Fatalf("%s %s: the job still ran %v after rank 0's checkpoint failed\n%s", l.Name, args[0], jobEndsWithin, &out)
		return "", 0, nil
	}
}

// blockPath replaces the file at path, which the job rewrites now and then, by a directory
// that is not empty, so that renaming a file over it fails.
func blockPath(t *testing.T, path string) {
	t.Helper()
	for os.Mkdir(path, 0o755) != nil {
		os.Remove(path)
	}
	if err := os.WriteFile(filepath.Join(path, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stopJob ends a launcher that hung: SIGTERM, which it passes on to its ranks, then SIGKILL.
func stopJob(cmd *exec.Cmd, done <-chan error) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// TestFaultRefusedMPIStartLeavesNoRunDir: an MPI start that every rank refuses leaves no run
// directory, under each installed MPI: `-np 3 --micro-batches 2` is refused before rank 0
// makes it, and a corpus too small for a validation batch after, when rank 0 must remove it
// before another rank ends the job.
func TestFaultRefusedMPIStartLeavesNoRunDir(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	launchers := testutil.MPILaunchers(t)
	dir := t.TempDir()
	corpus := func(name string, lines int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog.\n"), lines), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, data string
		np         int
		want       string
	}{
		{"micro-batches", corpus("corpus.txt", 1000), 3, "--micro-batches 2: 2 micro-batches cannot be spread over 3 ranks; use at least 3"},
		{"small-corpus", corpus("small.txt", 50), 2, "validation split has 0 tokens"},
	}
	for _, l := range launchers {
		for _, c := range cases {
			runDir := filepath.Join(dir, l.Name+"-"+c.name)
			out, err := l.Command(c.np, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, "train", "--preset", "gpt2-micro", "--data", c.data, "--steps", "2",
				"--batch", "2", "--seq", "16", "--micro-batches", "2", "--device", "cpu", "-q", "--run-dir", runDir).CombinedOutput()
			if err == nil || !strings.Contains(string(out), c.want) {
				t.Errorf("%s -np %d %s: %v, want the reason it was refused (%q)\n%s", l.Name, c.np, c.name, err, c.want, out)
			}
			if _, err := os.Stat(runDir); !os.IsNotExist(err) {
				t.Errorf("%s -np %d %s: a refused start left %s behind (%v)", l.Name, c.np, c.name, runDir, err)
			}
		}
	}
}
