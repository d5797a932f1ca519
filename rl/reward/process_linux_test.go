package reward

import (
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

// TestFaultRewardProgramLeavesNoOrphans: what a reward program starts in the background is
// killed with it on Close, though the program itself finished.
func TestFaultRewardProgramLeavesNoOrphans(t *testing.T) {
	cmd, pidFile := testutil.SleepInBackground(t, fmt.Sprintf("VKGRAD_FAKE_REWARD=ok %q", testutil.Executable(t)))
	p, err := NewProcess(cmd, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil {
		t.Fatal(err)
	}
	pid := testutil.ReadPid(t, pidFile)
	if !testutil.Alive(pid) {
		t.Fatalf("the background sleep %d is not running before Close", pid)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !testutil.WaitGone(pid, 5*time.Second) {
		t.Errorf("the program's background child %d outlived Close", pid)
	}
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("scoring after Close: %v", err)
	}
}

// TestFaultRewardProgramDiesWithVkgrad: SIGKILL to the process that started a reward program
// ends the program too (Linux's parent-death signal), though it would outlive its input.
func TestFaultRewardProgramDiesWithVkgrad(t *testing.T) {
	exe := testutil.Executable(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	parent := exec.Command(exe)
	parent.Env = append(os.Environ(), "VKGRAD_FAKE_VKGRAD="+fmt.Sprintf("echo $$ > %s; exec env VKGRAD_FAKE_REWARD=linger %q", pidFile, exe))
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, 6)
	if _, err := out.Read(ready); err != nil || string(ready) != "ready\n" {
		parent.Process.Kill()
		t.Fatalf("the parent said %q, %v", ready, err)
	}
	pid := testutil.ReadPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	if !testutil.WaitGone(pid, 5*time.Second) {
		t.Errorf("the reward program %d outlived the SIGKILLed process that started it", pid)
	}
}
