package reward

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultRewardRepliesOutOfStep: a line the program writes that no request asked for (a
// banner, a reply written twice) or a reply carrying another request's id is an error quoting
// it, never rewards paired with the wrong batch.
func TestFaultRewardRepliesOutOfStep(t *testing.T) {
	for _, c := range []struct {
		mode  string
		calls int           // calls that succeed before the failing one
		pause time.Duration // between calls: the stray line has arrived
		want  []string      // the failing call's error holds one of these
	}{
		{"banner", 1, time.Second, []string{`"{\"rewards\":[1.5,4]}" with no request waiting`}},
		{"echo-twice", 1, 0, []string{"with no request waiting", `carries "id": 1 while request 2 waits`}},
		{"echo-wrong", 0, 0, []string{`carries "id": 2 while request 1 waits`}},
		{"echo-once", 1, 0, []string{`to request 2 carries no "id", though earlier replies did`}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			p, _ := fakeProcess(t, c.mode, 20*time.Second)
			for i := range c.calls {
				if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				time.Sleep(c.pause)
			}
			got, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas)
			if err == nil || !containsAny(err.Error(), c.want) {
				t.Fatalf("rewards %v, error %v; want an error holding one of %q", got, err, c.want)
			}
			if _, again := p.ScoreAll(batchPrompts, batchCompls, batchMetas); again == nil {
				t.Errorf("after replies fell out of step the program must not be asked again")
			}
		})
	}
}

// TestFaultRewardStrayLineFoundOnClose: a program that does not echo ids and wrote a line more
// than asked for is reported when it is closed, even if no later request came to notice it.
func TestFaultRewardStrayLineFoundOnClose(t *testing.T) {
	p, _ := fakeProcess(t, "twice", 20*time.Second)
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err == nil || !strings.Contains(err.Error(), `wrote 1 line(s) no request asked for, the first "{\"rewards\":[1.5,4]}"`) {
		t.Fatalf("Close: %v", err)
	}
}

func TestProcessEchoedIDsStayInStep(t *testing.T) {
	p, _ := fakeProcess(t, "echo", 20*time.Second)
	for i := range 3 {
		if got, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil || got[0] != 1.5 {
			t.Fatalf("call %d: %v, %v", i+1, got, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFaultRewardStderrLongLine: a 20 MiB line on the program's standard error is forwarded cut
// and the lines after it still arrive; the program is never left blocked on a full pipe.
func TestFaultRewardStderrLongLine(t *testing.T) {
	p, log := fakeProcess(t, "loud", 30*time.Second)
	if got, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil || got[1] != 4 {
		t.Fatalf("%v, %v", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	l := log.String()
	if !strings.Contains(l, fmt.Sprintf("(a line of %d bytes, cut to %d)", 20<<20, stderrLine)) || !strings.Contains(l, "reward-cmd: after the long line\n") {
		t.Errorf("stderr forwarded as %d bytes, ending %q", len(l), l[max(0, len(l)-200):])
	}
	if len(l) > 2*stderrLine {
		t.Errorf("the long line reached the log whole: %d bytes", len(l))
	}
}

// TestFaultRewardProgramLeavesNoOrphans: what a reward program starts in the background is
// killed with it on Close, though the program itself finished.
func TestFaultRewardProgramLeavesNoOrphans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := fmt.Sprintf("sleep 3600 & echo $! > %s; VKGRAD_FAKE_REWARD=ok %q", pidFile, exe)
	p, err := NewProcess(cmd, 20*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, pidFile)
	if !alive(pid) {
		t.Fatalf("the background sleep %d is not running before Close", pid)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if waitGone(pid, 5*time.Second) {
		return
	}
	t.Errorf("the program's background child %d outlived Close", pid)
}

// TestFaultRewardProgramDiesWithVkgrad: SIGKILL to the process that started a reward program
// ends the program too (Linux's parent-death signal), though it would outlive its input.
func TestFaultRewardProgramDiesWithVkgrad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
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
	pid := readPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	if !waitGone(pid, 5*time.Second) {
		t.Errorf("the reward program %d outlived the SIGKILLed process that started it", pid)
	}
}

// fakeVkgrad starts the reward program command, has it score a batch and waits to be killed.
func fakeVkgrad(command string) {
	p, err := NewProcess(command, 20*time.Second, nil)
	if err == nil {
		_, err = p.ScoreAll(batchPrompts, batchCompls, batchMetas)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Print("ready\n")
	time.Sleep(time.Hour)
	os.Exit(0)
}

func readPid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}

// alive reports whether pid runs: a zombie, killed and waiting to be reaped, does not.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// waitGone waits up to d for pid to end.
func waitGone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
