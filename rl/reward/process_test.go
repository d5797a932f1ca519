package reward

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/rl"
)

// TestMain lets the test binary play the external reward program: with VKGRAD_FAKE_REWARD set
// it answers requests on stdin the way that variable says.
func TestMain(m *testing.M) {
	if mode := os.Getenv("VKGRAD_FAKE_REWARD"); mode != "" {
		fakeRewardProgram(mode)
		os.Exit(0)
	}
	if cmd := os.Getenv("VKGRAD_FAKE_VKGRAD"); cmd != "" {
		fakeVkgrad(cmd)
	}
	os.Exit(m.Run())
}

// fakeRewardProgram scores each completion by its length plus 0.5 when it equals the answer.
func fakeRewardProgram(mode string) {
	if mode == "banner" {
		fmt.Println(`{"rewards": [0, 0]}`)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 0; in.Scan(); n++ {
		var req struct {
			request
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(3)
		}
		fmt.Fprintf(os.Stderr, "batch %d of %d completions\n", n, len(req.Completions))
		rewards := make([]float64, len(req.Completions))
		for i, c := range req.Completions {
			rewards[i] = float64(len(c))
			if c == req.Metadata[i]["answer"] {
				rewards[i] += 0.5
			}
		}
		switch {
		case mode == "die-once" && n == 0 && os.Getenv("VKGRAD_FAKE_REWARD_STARTED") == "":
			os.Exit(7)
		case mode == "die-always":
			os.Exit(9)
		case mode == "hang":
			time.Sleep(time.Hour)
		case mode == "short":
			rewards = rewards[1:]
		case mode == "nan":
			fmt.Println(`{"rewards": [NaN, 1]}`)
			continue
		case mode == "string":
			fmt.Println(`{"rewards": [1, "two"]}`)
			continue
		case mode == "chatty":
			fmt.Println("loading model...")
			continue
		case mode == "loud":
			// A 20 MiB line on stderr, then a short one: neither may block the program.
			os.Stderr.Write(append(bytes.Repeat([]byte("x"), 20<<20), '\n'))
			fmt.Fprintln(os.Stderr, "after the long line")
		}
		reply := map[string]any{"rewards": rewards}
		switch {
		case mode == "echo", mode == "echo-twice", mode == "echo-once" && n == 0:
			reply["id"] = req.ID
		case mode == "echo-wrong":
			reply["id"] = req.ID + 1
		}
		b, _ := json.Marshal(reply)
		fmt.Println(string(b))
		if mode == "twice" || mode == "echo-twice" && n == 0 {
			fmt.Println(string(b))
		}
	}
	if mode == "linger" { // outlives its input: only a signal ends it
		time.Sleep(time.Hour)
	}
}

func fakeProcess(t *testing.T, mode string, timeout time.Duration) (*Process, *testutil.SyncBuffer) {
	t.Helper()
	var log testutil.SyncBuffer
	cmd := fmt.Sprintf("VKGRAD_FAKE_REWARD=%s %q", mode, testutil.Executable(t))
	if mode == "die-once" {
		// The restarted program sees the marker file and answers.
		marker := t.TempDir() + "/started"
		cmd = fmt.Sprintf("if [ -e %s ]; then export VKGRAD_FAKE_REWARD_STARTED=1; fi; touch %s; %s", marker, marker, cmd)
	}
	p, err := NewProcess(cmd, timeout, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &log
}

var (
	batchPrompts = []string{"1+1=", "2+2="}
	batchCompls  = []string{"2" + rl.EOSText, "five"}
	batchMetas   = []rl.Meta{{"answer": "2"}, {"answer": "4"}}
)

func TestProcessScoresBatchesInOrder(t *testing.T) {
	p, log := fakeProcess(t, "ok", 20*time.Second)
	for range 3 {
		got, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas)
		if err != nil {
			t.Fatal(err)
		}
		// "2" without its EOS text, equal to the answer: 1 + 0.5; "five": 4.
		if len(got) != 2 || got[0] != 1.5 || got[1] != 4 {
			t.Fatalf("rewards %v, want [1.5 4]", got)
		}
	}
	c, err := rl.NewCombined(rl.Weighted{Reward: p, Weight: 2}, rl.Weighted{Reward: Exact{Field: "answer"}, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := c.ScoreBatch(batchPrompts, batchCompls, batchMetas)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Total[0] != 2*1.5+1 || rb.Total[1] != 8 || rb.Means["cmd"] != 2.75 || rb.Stds["exact"] == 0 {
		t.Errorf("combined: total %v means %v stds %v", rb.Total, rb.Means, rb.Stds)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "reward-cmd: batch 0 of 2 completions") {
		t.Errorf("the program's stderr should reach the log, got %q", log.String())
	}
}

func TestProcessErrorsNameTheAnswer(t *testing.T) {
	for mode, want := range map[string]string{
		"short":  "1 rewards for 2 completions",
		"nan":    "not a JSON object",
		"string": `reward 1 is "two", not a number`,
		"chatty": `"loading model..."`,
	} {
		t.Run(mode, func(t *testing.T) {
			p, _ := fakeProcess(t, mode, 20*time.Second)
			_, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one containing %q", err, want)
			}
		})
	}
}

func TestProcessRestartsOnceAndTimesOut(t *testing.T) {
	p, log := fakeProcess(t, "die-once", 20*time.Second)
	if got, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err != nil || got[1] != 4 {
		t.Fatalf("a program that died once should be restarted and answer: %v, %v", got, err)
	}
	if l := log.String(); !strings.Contains(l, "vkgrad: warning: reward program") || !strings.Contains(l, "exit status 7") || !strings.Contains(l, "starting it again") {
		t.Errorf("the restart should be logged with the exit status, got %q", l)
	}
	p, _ = fakeProcess(t, "die-always", 20*time.Second)
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err == nil || !strings.Contains(err.Error(), "exit status 9") {
		t.Fatalf("a program dying on every batch: %v, want its exit status", err)
	}
	p, _ = fakeProcess(t, "hang", 300*time.Millisecond)
	start := time.Now()
	if _, err := p.ScoreAll(batchPrompts, batchCompls, batchMetas); err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("a hanging program: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the timeout took %s", time.Since(start))
	}
}
