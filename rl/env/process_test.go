package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/rl/toolcall"
)

func TestMain(m *testing.M) {
	if os.Getenv("VKGRAD_FAKE_ENV") != "" {
		fakeEnvProgram()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeCommand runs the test binary as the fake environment.
func fakeCommand(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("VKGRAD_FAKE_ENV=1 exec %q", testutil.Executable(t))
}

func startFake(t *testing.T, workers int, timeout time.Duration) (*Processes, *testutil.SyncBuffer) {
	t.Helper()
	var log testutil.SyncBuffer
	p, err := StartProcesses(ProcessConfig{Command: fakeCommand(t), Workers: workers, Timeout: timeout, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, &log
}

// open makes an episode and resets it from row.
func open(t *testing.T, p *Processes, row string) (Env, ResetResult) {
	t.Helper()
	e, err := p.Factory()()
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Reset(context.Background(), json.RawMessage(row), 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	return e, res
}

func step(e Env, turn int, text string) (StepResult, error) {
	return e.Step(context.Background(), Turn{Index: turn, Text: text})
}

// pidOf is the process id the fake environment reports in a step's info.
func pidOf(t *testing.T, r StepResult) int {
	t.Helper()
	pid, ok := r.Info["pid"].(float64)
	if !ok {
		t.Fatalf("no pid in %v", r.Info)
	}
	return int(pid)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestProcessEpisodeEndToEnd(t *testing.T) {
	p, log := startFake(t, 1, 20*time.Second)
	e, err := p.Factory()()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := e.Reset(ctx, json.RawMessage(`{"q": [1, 2]}`), MaxSeed, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(res), `{"messages":[{"role":"user","content":"episode e1 seed 9007199254740991 sample 3 example {\"q\":[1,2]}"}],"tools":[]}`; got != want {
		t.Errorf("reset: %s\nwant %s", got, want)
	}
	if res.Tools == nil {
		t.Error(`"tools": [] must offer no tools, not keep the row's`)
	}
	calls := []toolcall.Call{{Name: "add", Arguments: json.RawMessage(`{"a":1}`)}, {Name: "fail", Arguments: json.RawMessage(`{}`)}, {Raw: "{oops"}}
	r, err := e.Step(ctx, Turn{Index: 0, Text: "calling", ToolCalls: calls})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(r.Messages), `[{"role":"tool","content":"add({\"a\":1})"},{"role":"tool","content":"fail({})","error":true},{"role":"tool","content":"(){oops","error":true}]`; got != want {
		t.Errorf("step 0 messages %s\nwant %s", got, want)
	}
	if r.ToolFailures() != 2 || r.Reward != 0.5 || r.Done || r.Info["open"] != 1.0 {
		t.Errorf("step 0: %d failures, reward %g, done %v, info %v", r.ToolFailures(), r.Reward, r.Done, r.Info)
	}
	if r, err = step(e, 1, "no calls"); err != nil || mustJSON(r.Messages) != `[{"role":"user","content":"turn 1: no calls"}]` || r.Done {
		t.Fatalf("step 1: %+v, %v", r, err)
	}
	if r, err = step(e, 2, "last"); err != nil || r.Reward != 2.5 || !r.Done {
		t.Fatalf("step 2: %+v, %v", r, err)
	}
	if _, err := step(e, 3, "more"); err == nil || !strings.Contains(err.Error(), "episode e1 turn 3: the episode is done") || errors.Is(err, ErrEnv) {
		t.Errorf("a step after done: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if l := log.String(); l != "env-cmd 0: reset e1\nenv-cmd 0: step e1\nenv-cmd 0: step e1\nenv-cmd 0: step e1\nenv-cmd 0: close e1\n" {
		t.Errorf("standard error forwarded as %q", l)
	}
}

// TestProcessInterleavedEpisodes: eight episodes over two processes, all reset before any
// steps and all stepped before any closes, so each process holds four at every step.
func TestProcessInterleavedEpisodes(t *testing.T) {
	p, _ := startFake(t, 2, 20*time.Second)
	const n = 8
	envs := make([]Env, n)
	for i := range envs {
		var err error
		if envs[i], err = p.Factory()(); err != nil {
			t.Fatal(err)
		}
	}
	var reset, stepped sync.WaitGroup
	reset.Add(n)
	stepped.Add(n)
	pids := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, e := range envs {
		wg.Go(func() {
			errs[i] = playInterleaved(e, i, &reset, &stepped, &pids[i])
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("episode %d: %v", i, err)
		}
	}
	perPid := map[int]int{}
	for _, pid := range pids {
		perPid[pid]++
	}
	if len(perPid) != 2 || perPid[pids[0]] != 4 {
		t.Errorf("episodes per process %v, want 4 on each of 2", perPid)
	}
	if p.Restarts() != 0 {
		t.Errorf("%d restarts", p.Restarts())
	}
}

// playInterleaved resets e, waits for every episode's reset, steps it three times, waits for
// every episode's steps and closes it; it checks each answer is its own.
func playInterleaved(e Env, i int, reset, stepped *sync.WaitGroup, pid *int) error {
	ctx := context.Background()
	defer e.Close()
	res, err := e.Reset(ctx, json.RawMessage(fmt.Sprintf(`{"i": %d}`, i)), uint64(100+i), i)
	reset.Done()
	if err != nil {
		stepped.Done()
		return err
	}
	want := fmt.Sprintf("episode e%d seed %d sample %d example {\"i\":%d}", i+1, 100+i, i, i)
	if res.Messages[0].Content != want {
		stepped.Done()
		return fmt.Errorf("reset: %q, want %q", res.Messages[0].Content, want)
	}
	reset.Wait()
	defer stepped.Wait()
	defer stepped.Done()
	for turn := range 3 {
		text := fmt.Sprintf("episode %d says %d", i, turn)
		r, err := step(e, turn, text)
		if err != nil {
			return err
		}
		if r.Messages[0].Content != fmt.Sprintf("turn %d: %s", turn, text) || r.Reward != float64(turn)+0.5 || r.Done != (turn == 2) || r.Info["open"] != 4.0 {
			return fmt.Errorf("turn %d: %+v", turn, r)
		}
		*pid = int(r.Info["pid"].(float64))
	}
	return nil
}

func TestProcessErrorReplyEndsOnlyItsEpisode(t *testing.T) {
	p, _ := startFake(t, 1, 20*time.Second)
	bad, _ := open(t, p, `{"fail": "error"}`)
	good, _ := open(t, p, `{}`)
	_, err := step(bad, 0, "x")
	if !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), `episode e1 turn 0: reply "{\"id\": 3, \"episode\": \"e1\", \"error\": \"boom\"}": the environment says: boom`) {
		t.Fatalf("an error reply: %v", err)
	}
	if _, err := step(bad, 1, "x"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "the episode has ended") {
		t.Errorf("a step after the error: %v", err)
	}
	for turn := range 3 {
		if r, err := step(good, turn, "x"); err != nil || r.Reward != float64(turn)+0.5 {
			t.Fatalf("the other episode, turn %d: %+v, %v", turn, r, err)
		}
	}
	if err := bad.Close(); err != nil {
		t.Errorf("closing the ended episode: %v", err)
	}
	if err := good.Close(); err != nil {
		t.Error(err)
	}
	if p.Restarts() != 0 {
		t.Errorf("an error reply restarted the process %d times", p.Restarts())
	}
}

// TestProcessReplyBreakingRulesEndsItsEpisode: a reply that is a JSON object but whose
// members break the rules is an error naming the member and quoting the line; the process
// goes on with its other episodes.
func TestProcessReplyBreakingRulesEndsItsEpisode(t *testing.T) {
	for mode, want := range map[string]string{
		"assistant":   `"messages"[0]: "role" is "assistant": a step reply's messages are "tool" or "user"`,
		"huge-reward": `"reward" is 1e999, beyond a float64`,
		"misspelt":    `unknown member "rewards": a step reply's members are among "id", "episode", "turn", "error", "messages", "tools", "reward", "done" or "info"`,
		"user-error":  `"messages"[0]: "error": true on a "user" message`,
	} {
		t.Run(mode, func(t *testing.T) {
			p, _ := startFake(t, 1, 20*time.Second)
			bad, _ := open(t, p, fmt.Sprintf(`{"fail": %q}`, mode))
			good, _ := open(t, p, `{}`)
			_, err := step(bad, 0, "x")
			if !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `episode e1 turn 0: reply "{\"`) {
				t.Fatalf("error %v\nwant one holding %s and the line", err, want)
			}
			if r, err := step(good, 0, "x"); err != nil || r.Reward != 0.5 {
				t.Fatalf("the other episode: %+v, %v", r, err)
			}
			if p.Restarts() != 0 {
				t.Errorf("%d restarts", p.Restarts())
			}
		})
	}
}

// TestProcessFailureRestarts: a process that crashes, hangs, writes a line that is not JSON,
// writes a line no request asked for or echoes another episode or turn is started again; the
// episodes open on it end with ErrEnv errors, and later episodes work on the new process.
func TestProcessFailureRestarts(t *testing.T) {
	for _, c := range []struct {
		mode string
		want string // in the error of the step that found the failure
	}{
		{"crash", "exit status 3"},
		{"hang", "no reply within 2s (raise --env-timeout if it needs longer)"},
		{"not-json", `reply "loading model..." is not a JSON object`},
		{"other-episode", `echoes "episode": "e10" to a request of episode "e1"`},
		{"other-turn", `echoes "turn": 1 to a request of turn 0`},
		{"stray", "with no request waiting (after the reply to request 3)"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			var warnings testutil.SyncBuffer
			timeout := 20 * time.Second
			if c.mode == "hang" {
				timeout = 2 * time.Second // time enough to start and reset on a busy machine
			}
			p, err := StartProcesses(ProcessConfig{Command: fakeCommand(t), Timeout: timeout, Warn: func(msg string) { fmt.Fprintln(&warnings, msg) }})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			bad, _ := open(t, p, `{"fail": "`+c.mode+`"}`)
			other, _ := open(t, p, `{}`)
			_, err = step(bad, 0, "x")
			found := bad
			if c.mode == "stray" { // the extra line is found before the next request
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
				_, err = step(other, 0, "x")
				found = other
			}
			if !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant ErrEnv holding %q", err, c.want)
			}
			if found == bad {
				if _, err := step(other, 0, "x"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "episode e2 ended: its process failed and was started again: ") || !strings.Contains(err.Error(), c.want) {
					t.Errorf("the other open episode: %v", err)
				}
			} else if _, err := step(bad, 1, "x"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "started again") {
				t.Errorf("the episode that wrote the extra line: %v", err)
			}
			if p.Restarts() != 1 {
				t.Errorf("%d restarts, want 1", p.Restarts())
			}
			if w := warnings.String(); !strings.Contains(w, c.want) || !strings.Contains(w, "starting it again") {
				t.Errorf("warnings %q", w)
			}
			later, res := open(t, p, `{}`)
			if r, err := step(later, 0, "x"); err != nil || r.Reward != 0.5 || !strings.HasPrefix(res.Messages[0].Content, "episode e3 ") {
				t.Fatalf("an episode after the restart: %+v, %v", r, err)
			}
			for _, e := range []Env{bad, other, later} {
				if err := e.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			if err := p.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestProcessSeedBound(t *testing.T) {
	p, _ := startFake(t, 1, 20*time.Second)
	e, _ := p.Factory()()
	if _, err := e.Reset(context.Background(), nil, MaxSeed+1, 0); err == nil || !strings.Contains(err.Error(), "episode e1: seed 9007199254740992 is over 2^53-1") {
		t.Errorf("seed 2^53: %v", err)
	}
	res, err := e.Reset(context.Background(), nil, 1<<53-1, 0)
	if err != nil || res.Messages[0].Content != "episode e1 seed 9007199254740991 sample 0 example null" {
		t.Errorf("seed 2^53-1: %+v, %v", res, err)
	}
}

func TestProcessConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  ProcessConfig
		want string
	}{
		{ProcessConfig{Command: " "}, "--env-cmd: empty command"},
		{ProcessConfig{Command: "cat", Workers: -1}, "--env-workers -1 must be positive"},
		{ProcessConfig{Command: "cat", Timeout: -time.Second}, "--env-timeout -1s must be positive"},
	} {
		if _, err := StartProcesses(c.cfg); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestProcessCallsAfterClose: an episode used after its processes closed gets a plain error
// and its Close does nothing.
func TestProcessCallsAfterClose(t *testing.T) {
	p, _ := startFake(t, 1, 20*time.Second)
	e, _ := open(t, p, `{}`)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := step(e, 0, "x"); err == nil || !strings.Contains(err.Error(), "episode e1 turn 0 after Close") {
		t.Errorf("a step after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	if _, err := p.Factory()(); err == nil || !strings.Contains(err.Error(), "a new episode after Close") {
		t.Errorf("an episode after Close: %v", err)
	}
}

// TestProcessContextBoundsTheWaitForItsTurn: a step waiting while another episode's request
// holds the process gives up when its context ends, and is no environment error; a request
// already sent is bounded by the timeout alone.
func TestProcessContextBoundsTheWaitForItsTurn(t *testing.T) {
	p, _ := startFake(t, 1, 20*time.Second)
	hanging, _ := open(t, p, `{"fail": "hang"}`)
	waiting, _ := open(t, p, `{}`)
	go hanging.Step(context.Background(), Turn{Index: 0})
	time.Sleep(100 * time.Millisecond) // the hanging step holds the process
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := waiting.Step(ctx, Turn{Index: 0})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrEnv) || !strings.HasPrefix(err.Error(), "episode e2 turn 0: ") {
		t.Errorf("a step past its context: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the step gave up after %s", took)
	}
}

// TestProcessFailedRestartIsTriedAgain: a process that cannot be started again after a crash
// (its directory is gone) is started at the next request that finds it missing; the episodes
// open at the crash stay ended.
func TestProcessFailedRestartIsTriedAgain(t *testing.T) {
	dir := t.TempDir() + "/work"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var warnings testutil.SyncBuffer
	p, err := StartProcesses(ProcessConfig{Command: fakeCommand(t), Dir: dir, Timeout: 20 * time.Second, Warn: func(msg string) { fmt.Fprintln(&warnings, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	crashing, _ := open(t, p, `{"fail": "crash"}`)
	other, _ := open(t, p, `{}`)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := step(crashing, 0, "x"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("the crash: %v", err)
	}
	if w := warnings.String(); !strings.Contains(w, "starting it again: environment process 0") || !strings.Contains(w, "no such file or directory") {
		t.Errorf("warnings %q", w)
	}
	e, _ := p.Factory()()
	if _, err := e.Reset(context.Background(), nil, 1, 0); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "starting it: ") {
		t.Errorf("a reset while the process cannot start: %v", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := step(other, 0, "x"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "started again") {
		t.Errorf("an episode open at the crash: %v", err)
	}
	later, res := open(t, p, `{}`)
	if r, err := step(later, 0, "x"); err != nil || r.Reward != 0.5 || !strings.HasPrefix(res.Messages[0].Content, "episode e4 ") {
		t.Errorf("an episode once the process starts: %+v, %v", r, err)
	}
	if p.Restarts() != 1 {
		t.Errorf("%d restarts, want 1", p.Restarts())
	}
}

// TestProcessStrayLineFoundOnClose: a line no request asked for is reported by Close when no
// later request came to find it.
func TestProcessStrayLineFoundOnClose(t *testing.T) {
	p, _ := startFake(t, 1, 20*time.Second)
	e, _ := open(t, p, `{"fail": "stray"}`)
	if _, err := step(e, 0, "x"); err != nil {
		t.Fatal(err)
	}
	err := p.Close()
	if !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), `wrote 1 line(s) no request asked for, the first "{\"done\":false,\"episode\":\"e1\",\"id\":2,`) {
		t.Errorf("Close: %v", err)
	}
}
