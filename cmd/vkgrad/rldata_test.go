package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/internal/rundir"
)

// writeSums writes a dataset of n sums, one a line; lines maps a line number to the line
// written there instead.
func writeSums(t *testing.T, path string, n int, lines map[int]string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		l, ok := lines[i]
		if !ok {
			l = fmt.Sprintf(`{"prompt": "%d + %d =", "answer": " %d"}`, i%7, i%5, i%7+i%5)
		}
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// captureStderr runs fn with os.Stderr (where the commands log) sent to a pipe, and returns
// what was written.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	defer func() {
		os.Stderr = saved
	}()
	fn()
	os.Stderr = saved
	w.Close()
	return <-got
}

// A run directory is data: --init takes its model and nothing else, so the reward program,
// dataset and verifiers in its config.json stay there; --init-task takes its task flags when
// asked, but never its program.
func TestFaultInitRunsNoCommand(t *testing.T) {
	dir := t.TempDir()
	evil := tinySFT(t, dir)
	marker := filepath.Join(dir, "pwned")
	theirs, mine := filepath.Join(dir, "theirs.jsonl"), filepath.Join(dir, "mine.jsonl")
	writeSums(t, theirs, 40, nil)
	writeSums(t, mine, 40, nil)
	cfgPath := filepath.Join(evil, "config.json")
	var meta rlrun.RunMeta
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	meta.Tasks.Data.Path, meta.Tasks.Data.RewardCmd, meta.Tasks.Data.Reward = theirs, "touch "+marker, "cmd:1"
	if err := rundir.WriteConfig(evil, meta); err != nil {
		t.Fatal(err)
	}
	short := map[string][]string{
		"grpo": {"--prompts", "2", "--group-size", "2"},
		"ppo":  {"--prompts", "2", "--critic-warmup", "0"},
		"sft":  {"--batch", "2", "--stop-at-accuracy", "0"},
	}
	for i, c := range []struct {
		args    []string
		dataset string // the dataset the run must record, "" for the built-in task
		err     string // the error wanted, "" for none
	}{
		{[]string{"grpo", "--dataset", mine, "--reward", "exact"}, mine, ""},
		{[]string{"grpo"}, "", ""},
		{[]string{"ppo", "--dataset", mine}, mine, ""},
		{[]string{"sft"}, "", ""},
		{[]string{"grpo", "--init-task"}, "", "never taken from another run"},
		{[]string{"grpo", "--init-task", "--reward", "exact"}, theirs, ""},
	} {
		runDir := filepath.Join(dir, fmt.Sprintf("run%d", i))
		args := append(slices.Clone(c.args), "--init", evil, "--run-dir", runDir, "--steps", "1", "--eval-samples", "0", "--held-out-share", "0.25")
		args = append(append(args, short[c.args[0]]...), rlCommon...)
		out, err := runCLI(args...)
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Fatalf("%v ran the command in --init's config.json", c.args)
		}
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v\n%s", c.args, err, out)
			continue
		}
		var got rlrun.RunMeta
		raw, _ := os.ReadFile(filepath.Join(runDir, "config.json"))
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.Tasks.Data.Path != c.dataset || got.Tasks.Data.RewardCmd != "" {
			t.Errorf("%v: the run recorded dataset %q and reward program %q, want %q and none", c.args, got.Tasks.Data.Path, got.Tasks.Data.RewardCmd, c.dataset)
		}
	}
}

// Every dataset prompt is checked before the first step: a line with no answer where the
// rewards or sft need one, and a prompt the model's context cannot hold, are refused by file
// and line; a reward that needs no answer takes lines without one.
func TestFaultDatasetRowsCheckedUpFront(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	long := `{"prompt": "` + strings.Repeat("seven ", 70) + `=", "answer": " 1"}`
	noAnswer := filepath.Join(dir, "noanswer.jsonl")
	writeSums(t, noAnswer, 40, map[int]string{30: `{"prompt": "1 + 1 ="}`})
	noNumber := filepath.Join(dir, "nonumber.jsonl")
	writeSums(t, noNumber, 40, map[int]string{12: `{"prompt": "1 + 1 =", "answer": "two"}`})
	tooLong := filepath.Join(dir, "long.jsonl")
	writeSums(t, tooLong, 200, map[int]string{150: long})
	answerTooLong := filepath.Join(dir, "longanswer.jsonl")
	writeSums(t, answerTooLong, 40, map[int]string{7: `{"prompt": "1 + 1 =", "answer": "` + strings.Repeat(" two", 70) + `"}`})
	run := func(args ...string) (string, error) {
		args = append(args, "--init", sft, "--run-dir", filepath.Join(dir, "run"), "--overwrite", "--steps", "1", "--eval-samples", "0", "--held-out-share", "0.25")
		return runCLI(append(args, rlCommon...)...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grpo", "--dataset", noAnswer, "--reward", "exact"}, noAnswer + ":30: no answer to train or score on"},
		{[]string{"grpo", "--dataset", noAnswer, "--reward", "regex", "--reward-regex", "is {answer}"}, noAnswer + ":30: no answer"},
		{[]string{"sft", "--dataset", noAnswer}, noAnswer + ":30: no answer"},
		{[]string{"grpo", "--dataset", noNumber, "--reward", "numeric"}, noNumber + `:12: answer "two" holds no number`},
		{[]string{"grpo", "--dataset", tooLong}, tooLong + ":150: the prompt's 71 tokens leave no room for a completion in the model's context of 64"},
		{[]string{"sft", "--dataset", tooLong}, tooLong + ":150: the prompt (71 tokens) and its answer exceed the model's context of 64"},
		{[]string{"sft", "--dataset", answerTooLong}, answerTooLong + ":7: the prompt (4 tokens) and its answer exceed"},
	} {
		if out, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q\n%s", c.args, err, c.want, out)
		}
	}
	if out, err := run("grpo", "--dataset", noAnswer, "--reward", "length", "--target-length", "4", "--prompts", "2", "--group-size", "2"); err != nil {
		t.Errorf("a reward that needs no answer: %v\n%s", err, out)
	}
}

// A resumed run refuses a dataset that changed since it started, naming the file, and shows
// the reward program from its config.json before starting it.
func TestFaultResumeRefusesChangedDataset(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	data := filepath.Join(dir, "sums.jsonl")
	writeSums(t, data, 40, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := "VKGRAD_TEST_AS_REWARD=1 " + exe
	runDir := filepath.Join(dir, "grpo")
	args := append([]string{"grpo", "--init", sft, "--run-dir", runDir, "--steps", "2", "--stop-at", "1", "--prompts", "2", "--group-size", "2",
		"--dataset", data, "--reward-cmd", cmd, "--eval-samples", "0", "--held-out-share", "0.25"}, rlCommon...)
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(orig), "\n"), "\n")
	slices.Reverse(lines)
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resume := append([]string{"grpo", "--resume", runDir}, rlCommon...)
	if _, err := runCLI(resume...); err == nil || !strings.Contains(err.Error(), "--dataset "+data+" changed since the run started") {
		t.Fatalf("resume on reordered data: %v", err)
	}
	if err := os.WriteFile(data, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	logs := captureStderr(t, func() { out, err = runCLI(resume...) })
	if err != nil {
		t.Fatalf("resume on the same data: %v\n%s\n%s", err, out, logs)
	}
	if !strings.Contains(logs, "starting the resumed run's reward program") || !strings.Contains(logs, "VKGRAD_TEST_AS_REWARD=1") {
		t.Errorf("the resumed run's reward program was not shown before it started:\n%s", logs)
	}
}
