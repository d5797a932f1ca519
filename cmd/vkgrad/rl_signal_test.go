//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
)

// SIGTERM (or Ctrl-C) during a run saves a checkpoint after the step in progress and fails with
// how to continue; --resume then finishes the run exactly as an uninterrupted one.
func TestRLInterruptSavesAndResumes(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	args := append([]string{"grpo", "--init", sft, "--steps", "4", "--prompts", "2", "--group-size", "3", "--beta", "0.1", "--entropy-coef", "0.01"}, rlCommon...)
	straight, interrupted := filepath.Join(dir, "straight"), filepath.Join(dir, "interrupted")
	if out, err := runCLI(append(args, "--run-dir", straight)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sigtermAfterStep(t, 2)
	out, err := runCLI(append(args, "--run-dir", interrupted)...)
	afterStepHook = nil
	if err == nil || !strings.Contains(err.Error(), "interrupted at step 2 of 4") || !strings.Contains(err.Error(), "vkgrad grpo --resume "+interrupted) {
		t.Fatalf("interrupted run: %v\n%s", err, out)
	}
	if st, err := checkpoint.Peek(filepath.Join(interrupted, load.RunCheckpoint)); err != nil || st.Step != 2 {
		t.Fatalf("checkpoint after the interrupt: %v, step %v", err, st)
	}
	if out, err := runCLI(append([]string{"grpo", "--resume", interrupted}, rlCommon...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sameRun(t, "grpo", straight, interrupted, 4)
}

// sigtermAfterStep makes the next run send itself SIGTERM after its step n and wait for the
// run to notice; the caller clears afterStepHook when the run returns.
func sigtermAfterStep(t *testing.T, n int) {
	afterStepHook = func(ctx context.Context, step int) {
		if step != n {
			return
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Second):
			t.Error("SIGTERM did not reach the run")
		}
	}
}
