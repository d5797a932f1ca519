//go:build unix

package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
)

// killAndResume starts the test binary as `vkgrad args... --run-dir dir`, kills it with
// SIGKILL after delay, then finishes the run in this process: --resume when a checkpoint
// survived, else afresh with --overwrite.
func killAndResume(t *testing.T, command string, args []string, dir string, delay time.Duration, steps int, resume []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(append([]string{command}, args...), "--run-dir", dir)...)
	cmd.Env = append(os.Environ(), "VKGRAD_TEST_AS_CLI=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if st, err := checkpoint.Peek(filepath.Join(dir, load.RunCheckpoint)); err == nil {
		if st.Step >= steps {
			return // the run had finished
		}
		if out, err := runCLI(append([]string{command, "--resume", dir}, resume...)...); err != nil {
			t.Fatalf("resuming after a kill at %v: %v\n%s", delay, err, out)
		}
		return
	}
	if out, err := runCLI(append(append([]string{command}, args...), "--run-dir", dir, "--overwrite")...); err != nil {
		t.Fatalf("starting over after a kill at %v: %v\n%s", delay, err, out)
	}
}

// TestFaultKillDuringTraining: kill -9 at random moments of `train` leaves a run that resumes
// to the checkpoint of an uninterrupted run, byte for byte.
func TestFaultKillDuringTraining(t *testing.T) {
	straight := filepath.Join(t.TempDir(), "straight")
	args := trainArgs(t, straight, "--steps", "8", "--save-every", "1")
	args = args[1 : len(args)-2] // drop "train" and the run directory
	if out, err := runCLI(append(append([]string{"train"}, args...), "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(straight, load.RunCheckpoint))
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 4 {
		dir := filepath.Join(t.TempDir(), "killed")
		delay := time.Duration(100+r.IntN(1200)) * time.Millisecond
		killAndResume(t, "train", args, dir, delay, 8, []string{"--device", "cpu", "-q"})
		got, _ := os.ReadFile(filepath.Join(dir, load.RunCheckpoint))
		if !bytes.Equal(got, want) {
			t.Errorf("trial %d, killed at %v: the finished run's checkpoint differs from an uninterrupted run's", trial, delay)
		}
	}
}

// TestFaultKillDuringGRPO: the same for grpo.
func TestFaultKillDuringGRPO(t *testing.T) {
	base := t.TempDir()
	sft := tinySFT(t, base)
	args := append([]string{"--init", sft, "--steps", "5", "--prompts", "2", "--group-size", "3", "--save-every", "1"}, rlCommon...)
	straight := filepath.Join(base, "straight")
	if out, err := runCLI(append(append([]string{"grpo"}, args...), "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 4 {
		dir := filepath.Join(t.TempDir(), "killed")
		delay := time.Duration(100+r.IntN(1500)) * time.Millisecond
		killAndResume(t, "grpo", args, dir, delay, 5, rlCommon)
		t.Logf("trial %d: killed at %v", trial, delay)
		sameRun(t, "grpo", straight, dir, 5)
	}
}
