package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

// startPythonExample runs testdata/guess_env.py, the example environment the documentation
// points to.
func startPythonExample(t *testing.T, workers int) (*Processes, *testutil.SyncBuffer) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the example environment is not run")
	}
	var log testutil.SyncBuffer
	p, err := StartProcesses(ProcessConfig{Command: "exec python3 guess_env.py", Dir: "testdata", Workers: workers, Timeout: 30 * time.Second, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &log
}

// guessCall is a turn calling the example's tool guess.
func guessCall(turn, n int) Turn {
	text := fmt.Sprintf(`<tool_call>{"name": "guess", "arguments": {"number": %d}}</tool_call>`, n)
	calls, _, _ := toolcall.Parse(toolcall.Hermes, text)
	return Turn{Index: turn, Text: text, ToolCalls: calls}
}

// playBinarySearch plays the example game from 1 to top and returns the turns it took and the
// last result.
func playBinarySearch(t *testing.T, e Env, top int) (int, StepResult) {
	t.Helper()
	lo, hi := 1, top
	for turn := 0; ; turn++ {
		mid := (lo + hi) / 2
		r, err := e.Step(context.Background(), guessCall(turn, mid))
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if len(r.Messages) != 1 || r.Messages[0].Role != "tool" {
			t.Fatalf("turn %d: messages %+v", turn, r.Messages)
		}
		switch r.Messages[0].Content {
		case "higher":
			lo = mid + 1
		case "lower":
			hi = mid - 1
		case "correct":
			if !r.Done || r.Reward != 1 || r.Info["secret"] != float64(mid) {
				t.Fatalf("a correct guess of %d: %+v", mid, r)
			}
			return turn + 1, r
		default:
			t.Fatalf("turn %d: %q", turn, r.Messages[0].Content)
		}
		if r.Done || r.Reward != 0 {
			t.Fatalf("turn %d, a wrong guess: %+v", turn, r)
		}
	}
}

func TestProcessPythonExample(t *testing.T) {
	p, log := startPythonExample(t, 2)
	f := p.Factory()
	ctx := context.Background()
	turns := make([]int, 2)
	for i := range turns { // two samples of one group: the same secret, the same search
		e, err := f()
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Reset(ctx, nil, 42, i)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Content != "I am thinking of a whole number from 1 to 100. Call the tool guess to guess it." || len(res.Tools) != 1 || !strings.Contains(string(res.Tools[0]), `"name": "guess"`) {
			t.Fatalf("reset: %+v, tools %s", res, res.Tools)
		}
		turns[i], _ = playBinarySearch(t, e, 100)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if turns[0] != turns[1] || turns[0] > 7 {
		t.Errorf("the two samples took %v turns: one seed, one secret, at most 7 turns", turns)
	}

	e, _ := f()
	if _, err := e.Reset(ctx, json.RawMessage(`{"max": 1}`), 5, 0); err != nil {
		t.Fatal(err)
	}
	text := `<tool_call>{"name": "guess", "arguments": {"number": "one"}}</tool_call><tool_call>{oops}</tool_call>`
	calls, _, _ := toolcall.Parse(toolcall.Hermes, text)
	r, err := e.Step(ctx, Turn{Index: 0, Text: text, ToolCalls: calls})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(r.Messages); got != `[{"role":"tool","content":"number must be an integer","error":true},{"role":"tool","content":"that call did not parse","error":true}]` || r.ToolFailures() != 2 || r.Done {
		t.Errorf("failed calls: %s, %+v", got, r)
	}
	if r, err = e.Step(ctx, Turn{Index: 1, Text: "1"}); err != nil || mustJSON(r.Messages) != `[{"role":"user","content":"Call the tool guess with a number."}]` {
		t.Errorf("a turn without calls: %+v, %v", r, err)
	}
	if r, err = e.Step(ctx, guessCall(2, 1)); err != nil || !r.Done || r.Reward != 1 {
		t.Errorf("the only number: %+v, %v", r, err)
	}
	e.Close()

	e, _ = f()
	if _, err := e.Reset(ctx, json.RawMessage(`{"max": "ten"}`), 5, 0); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), `the environment says: ValueError: invalid literal for int() with base 10: 'ten'`) {
		t.Errorf("a row the environment refuses: %v", err)
	}
	e.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Restarts() != 0 {
		t.Errorf("%d restarts", p.Restarts())
	}
	if l := log.String(); !strings.Contains(l, `: episode e4: ValueError("invalid literal for int() with base 10: 'ten'")`) {
		t.Errorf("the example's standard error: %q", l)
	}
}
