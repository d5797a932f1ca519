package reward

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/lineproto"
	"github.com/vkgrad/vkgrad/rl"
)

// TestFaultRewardRepliesOutOfStep: a line the program writes that no request asked for (a
// banner, a reply written twice) or a reply carrying another request's id is an error quoting
// it, never rewards paired with the wrong batch.
func TestFaultRewardRepliesOutOfStep(t *testing.T) {
	for _, c := range []struct {
		mode  string
		by    int           // the call that fails at the latest; the ones before may succeed
		pause time.Duration // between calls: the stray line has arrived
		want  []string      // the failing call's error holds one of these
	}{
		// The banner is caught before the first request, or it is taken for the first reply
		// and the reply it displaced is caught before the second.
		{"banner", 2, time.Second, []string{`"{\"rewards\": [0, 0]}" with no request waiting (before the first request)`, `"{\"rewards\":[1.5,4]}" with no request waiting (after the reply to request 1)`}},
		{"echo-twice", 2, 0, []string{"with no request waiting", `carries "id": 1 while request 2 waits`}},
		{"echo-wrong", 1, 0, []string{`carries "id": 2 while request 1 waits`}},
		{"echo-once", 2, 0, []string{`to request 2 carries no "id", though earlier replies did`}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			p, _ := fakeProcess(t, c.mode, 20*time.Second)
			var err error
			for i := 1; i <= c.by; i++ {
				var got []float64
				got, err = p.ScoreAll(batchPrompts, batchCompls, batchMetas)
				if err != nil {
					break
				}
				if i == c.by {
					t.Fatalf("call %d: rewards %v, want an error", i, got)
				}
				time.Sleep(c.pause)
			}
			if !containsAny(err.Error(), c.want) {
				t.Fatalf("error %v; want one holding one of %q", err, c.want)
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
	if !strings.Contains(l, fmt.Sprintf("(a line of %d bytes, cut to %d)", 20<<20, lineproto.StderrLine)) || !strings.Contains(l, "reward-cmd: after the long line\n") {
		t.Errorf("stderr forwarded as %d bytes, ending %q", len(l), l[max(0, len(l)-200):])
	}
	if len(l) > 2*lineproto.StderrLine {
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

// TestFaultRewardProgramNotReading: a program that never reads its input cannot block a large
// request's write past --reward-timeout.
func TestFaultRewardProgramNotReading(t *testing.T) {
	p, err := NewProcess("exec sleep 3600", 300*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20) // more than a pipe holds
	done := make(chan error, 1)
	go func() {
		_, err := p.ScoreAll([]string{""}, []string{big}, []rl.Meta{nil})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("%v", err)
		}
		p.Close()
	case <-time.After(20 * time.Second):
		t.Fatal("the request's write blocked past the timeout") // the stuck program dies with the test
	}
}
