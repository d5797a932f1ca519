//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
)

// SIGTERM during `vkgrad train` saves a checkpoint after the step in progress and fails with
// how to continue; --resume then ends with the checkpoint of an uninterrupted run.
func TestTrainInterruptSavesAndResumes(t *testing.T) {
	straight, interrupted := filepath.Join(t.TempDir(), "straight"), filepath.Join(t.TempDir(), "interrupted")
	args := trainArgs(t, straight)
	args = append(args[:len(args)-2], "--steps", "4", "--save-every", "0")
	if out, err := runCLI(append(args, "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sigtermAfterStep(t, 2)
	out, err := runCLI(append(args, "--run-dir", interrupted)...)
	afterStepHook = nil
	if err == nil || !strings.Contains(err.Error(), "interrupted at step 2; saved ") || !strings.Contains(err.Error(), "vkgrad train --resume "+interrupted) {
		t.Fatalf("interrupted run: %v\n%s", err, out)
	}
	if st, err := checkpoint.Peek(filepath.Join(interrupted, load.RunCheckpoint)); err != nil || st.Step != 2 {
		t.Fatalf("checkpoint after the interrupt: %v, step %v", err, st)
	}
	if out, err := runCLI("train", "--resume", interrupted, "--device", "cpu", "-q"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(straight, load.RunCheckpoint))
	got, _ := os.ReadFile(filepath.Join(interrupted, load.RunCheckpoint))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Error("the interrupted and resumed run ends with another checkpoint than an uninterrupted one")
	}
}
