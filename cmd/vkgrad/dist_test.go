package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// TestMain lets the test binary run as the vkgrad command, for tests that start it under an
// MPI launcher, or as an external reward program.
func TestMain(m *testing.M) {
	if os.Getenv("VKGRAD_TEST_AS_REWARD") == "1" {
		rewardProgram()
		os.Exit(0)
	}
	if os.Getenv("VKGRAD_TEST_AS_CLI") == "1" {
		os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
	}
	os.Exit(m.Run())
}

// TestTrainDataParallel: `mpirun -np 2 vkgrad train --micro-batches 2` writes the checkpoint a
// single process writes, byte for byte, with each installed MPI; a 2-rank run stopped halfway
// and resumed by one process ends there too.
func TestTrainDataParallel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "corpus.txt")
	var text bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&text, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i, i%7)
	}
	if err := os.WriteFile(data, text.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(runDir string, extra ...string) []string {
		return append([]string{"train", "--preset", "gpt2-micro", "--data", data, "--steps", "4", "--batch", "2", "--seq", "16",
			"--micro-batches", "2", "--device", "cpu", "--sample-tokens", "0", "--val-every", "0", "-q", "--run-dir", runDir}, extra...)
	}
	single := filepath.Join(dir, "single")
	want := singleCheckpoint(t, single, args(single))
	for _, l := range testutil.MPILaunchers(t) {
		runDir := filepath.Join(dir, l.Name)
		sameCheckpointOnTwoRanks(t, l, runDir, args(runDir), want)
		// Rank 0 sends rank 1 its half of its micro-batch's gradient, then its reduced half:
		// 4 bytes a parameter in all.
		cfg, _ := gpt2.Preset("gpt2-micro")
		if lines := metricLines(t, runDir, "train"); len(lines) == 0 || lines[0]["comm_bytes"] != float64(4*cfg.NumParams()) || !(lines[0]["comm_seconds"].(float64) > 0) {
			t.Errorf("%s -np 2: step lines %v, want comm_bytes %d", l.Name, lines, 4*cfg.NumParams())
		}
		stopped := filepath.Join(dir, l.Name+"-stopped")
		if out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args(stopped, "--stop-at", "2")...).CombinedOutput(); err != nil {
			t.Fatalf("%s -np 2 --stop-at 2: %v\n%s", l.Name, err, out)
		}
		if out, err := runCLI("train", "--resume", stopped, "--device", "cpu", "-q"); err != nil {
			t.Fatalf("resuming a 2-rank run with one process: %v\n%s", err, out)
		}
		if got, _ := os.ReadFile(filepath.Join(stopped, "checkpoint.safetensors")); !bytes.Equal(got, want) {
			t.Errorf("%s: a 2-rank run resumed by one process ends with another checkpoint", l.Name)
		}
	}
}

// TestSFTDataParallel: `mpirun -np 2 vkgrad sft --micro-batch 2` writes the checkpoint a single
// process writes with the same micro-batches, byte for byte, with each installed MPI.
func TestSFTDataParallel(t *testing.T) {
	dir := t.TempDir()
	args := func(runDir string) []string {
		return []string{"sft", "--steps", "3", "--batch", "6", "--micro-batch", "2", "--max-digits", "1", "--min-digits", "1",
			"--held-out-fraction", "0.3", "--eval-size", "4", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--run-dir", runDir}
	}
	single := filepath.Join(dir, "single")
	want := singleCheckpoint(t, single, args(single))
	for _, l := range testutil.MPILaunchers(t) {
		runDir := filepath.Join(dir, l.Name)
		sameCheckpointOnTwoRanks(t, l, runDir, args(runDir), want)
	}
}

// TestRLDataParallel: `mpirun -np 2 vkgrad grpo|ppo --micro-batch 4` writes the checkpoint
// that `-np 1` writes, byte for byte, with each installed MPI; a 2-rank run stopped halfway and
// resumed by a plain process (no MPI) ends there too.
func TestRLDataParallel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sft := filepath.Join(dir, "sft")
	if out, err := runCLI("sft", "--steps", "2", "--batch", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3",
		"--eval-size", "4", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--run-dir", sft); err != nil {
		t.Fatalf("sft: %v\n%s", err, out)
	}
	// Rewards that vary within a group: a length penalty past 12 characters.
	data := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(data, []byte(`{"prompt": "1+1="}
{"prompt": "2+3="}
{"prompt": "4+1="}
{"prompt": "3+3="}
{"prompt": "2+2="}
{"prompt": "5+4="}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"grpo", "ppo"} {
		args := func(runDir string, extra ...string) []string {
			return append([]string{command, "--init", sft, "--dataset", data, "--reward", "length:1", "--target-length", "12", "--eval-size", "0",
				"--steps", "3", "--prompts", "3", "--group-size", "4", "--micro-batch", "4", "--max-new-tokens", "4", "--lr", "1e-2",
				"--device", "cpu", "-q", "--run-dir", runDir}, extra...)
		}
		for _, l := range testutil.MPILaunchers(t) {
			name := command + "-" + l.Name
			one := filepath.Join(dir, name+"-1")
			if out, err := l.Command(1, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args(one)...).CombinedOutput(); err != nil {
				t.Fatalf("%s -np 1: %v\n%s", name, err, out)
			}
			want, err := os.ReadFile(filepath.Join(one, "checkpoint.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range metricLines(t, one, command) {
				if !(line["grad_norm"].(float64) > 0) {
					t.Fatalf("%s -np 1: a step with no gradient cannot tell runs apart: %v", name, line)
				}
			}
			sameCheckpointOnTwoRanks(t, l, filepath.Join(dir, name+"-2"), args(filepath.Join(dir, name+"-2")), want)
			for _, line := range metricLines(t, filepath.Join(dir, name+"-2"), command) {
				if !(line["comm_bytes"].(float64) > 0) || !(line["comm_seconds"].(float64) > 0) {
					t.Errorf("%s -np 2: a step line without its MPI traffic: %v", name, line)
				}
			}
			stopped := filepath.Join(dir, name+"-stopped")
			if out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args(stopped, "--stop-at", "1")...).CombinedOutput(); err != nil {
				t.Fatalf("%s -np 2 --stop-at 1: %v\n%s", name, err, out)
			}
			if out, err := runCLI(command, "--resume", stopped, "--device", "cpu", "-q"); err != nil {
				t.Fatalf("resuming a 2-rank run in one process: %v\n%s", err, out)
			}
			if got, _ := os.ReadFile(filepath.Join(stopped, "checkpoint.safetensors")); !bytes.Equal(got, want) {
				t.Errorf("%s: a 2-rank run resumed by a plain process ends with another checkpoint", name)
			}
		}
	}
}

// TestDevicesPerRank: `vkgrad devices` under each MPI prints the device each rank takes.
func TestDevicesPerRank(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range testutil.MPILaunchers(t) {
		out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, "devices").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", l.Name, err, out)
		}
		for _, want := range []string{"rank 0 of 2", "rank 1 of 2", "--device auto -> "} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%s: devices under MPI lacks %q:\n%s", l.Name, want, out)
			}
		}
	}
}

// TestTrainDataParallelOnLavapipe: two ranks on the Vulkan device write the checkpoint one
// process writes there with the same micro-batches, byte for byte.
func TestTrainDataParallelOnLavapipe(t *testing.T) {
	testutil.Vulkan(t) // skips without a device unless VKGRAD_REQUIRE_VULKAN=1
	dir := t.TempDir()
	data := filepath.Join(dir, "corpus.txt")
	var text bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&text, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i, i%7)
	}
	if err := os.WriteFile(data, text.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(runDir string) []string {
		return []string{"train", "--preset", "gpt2-micro", "--data", data, "--steps", "3", "--batch", "2", "--seq", "16",
			"--micro-batches", "2", "--device", "vulkan:0", "--sample-tokens", "0", "--val-fraction", "0", "-q", "--run-dir", runDir}
	}
	single := filepath.Join(dir, "single")
	want := singleCheckpoint(t, single, args(single))
	for _, l := range testutil.MPILaunchers(t) {
		runDir := filepath.Join(dir, l.Name)
		sameCheckpointOnTwoRanks(t, l, runDir, args(runDir), want)
	}
}

// singleCheckpoint runs the command args(runDir) in this process and returns the checkpoint it
// wrote: what a data-parallel run must write byte for byte.
func singleCheckpoint(t *testing.T, runDir string, args []string) []byte {
	t.Helper()
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(runDir, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// sameCheckpointOnTwoRanks runs args under l with two ranks and requires the checkpoint in
// runDir to be want, byte for byte.
func sameCheckpointOnTwoRanks(t *testing.T, l testutil.Launcher, runDir string, args []string, want []byte) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := l.Command(2, []string{"VKGRAD_TEST_AS_CLI=1"}, exe, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s -np 2: %v\n%s", l.Name, err, out)
	}
	if got, err := os.ReadFile(filepath.Join(runDir, "checkpoint.safetensors")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s -np 2: checkpoint differs from a single process's (%v)\n%s", l.Name, err, out)
	}
}
