package reward

import (
	"fmt"
	"os"
	"strings"
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

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
