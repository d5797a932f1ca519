package env

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// TestProcessCloseLeavesNoOrphans: Close ends the processes and what they started in the
// background, even while a request hangs. A process that crashes is noticed at once, though
// its background child holds its output open, and the child is gone with it.
func TestProcessCloseLeavesNoOrphans(t *testing.T) {
	cmd, pidFile := testutil.SleepInBackground(t, fakeCommand(t))
	p, err := StartProcesses(ProcessConfig{Command: cmd, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	crashing, _ := open(t, p, `{"fail": "crash"}`)
	start := time.Now()
	if _, err := step(crashing, 0, "x"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("the crash: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the crash was noticed after %s", took)
	}
	first := testutil.ReadPids(t, pidFile)[0]
	if !testutil.WaitGone(first, 5*time.Second) {
		t.Errorf("the background child %d of the crashed process outlived its restart", first)
	}

	hanging, _ := open(t, p, `{"fail": "hang"}`)
	other, _ := open(t, p, `{}`)
	r, err := step(other, 0, "x")
	if err != nil {
		t.Fatal(err)
	}
	envPid, background := pidOf(t, r), testutil.ReadPids(t, pidFile)[1]
	if !testutil.Alive(envPid) || !testutil.Alive(background) {
		t.Fatalf("process %d or its child %d is not running before Close", envPid, background)
	}
	stepped := make(chan error, 1)
	go func() {
		_, err := hanging.Step(context.Background(), Turn{Index: 0})
		stepped <- err
	}()
	time.Sleep(100 * time.Millisecond) // the step is in flight
	start = time.Now()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %s with a request hanging", took)
	}
	if err := <-stepped; err == nil {
		t.Error("the hanging step returned no error")
	}
	for _, pid := range []int{envPid, background} {
		if !testutil.WaitGone(pid, 5*time.Second) {
			t.Errorf("process %d outlived Close", pid)
		}
	}
}
