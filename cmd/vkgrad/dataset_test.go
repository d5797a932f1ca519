package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewardProgram answers reward requests: 1 for a completion holding its answer, else 0.1 per
// character up to 0.5, so rewards vary within a group.
func rewardProgram() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		var req struct {
			Prompts     []string            `json:"prompts"`
			Completions []string            `json:"completions"`
			Metadata    []map[string]string `json:"metadata"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		out := make([]float64, len(req.Completions))
		for i, c := range req.Completions {
			if strings.Contains(c, req.Metadata[i]["answer"]) {
				out[i] = 1
			} else {
				out[i] = min(0.5, 0.1*float64(len(c)))
			}
		}
		logScored(req.Prompts, req.Completions)
		fmt.Fprintf(os.Stderr, "scored %d\n", len(out))
		b, _ := json.Marshal(map[string]any{"rewards": out})
		fmt.Println(string(b))
	}
}

// logScored appends a line per scored completion, "<prompt>|<completion>" quoted, to the file
// $VKGRAD_TEST_REWARD_LOG names (when set), in one write so that programs sharing the file do
// not interleave their lines.
func logScored(prompts, completions []string) {
	name := os.Getenv("VKGRAD_TEST_REWARD_LOG")
	if name == "" {
		return
	}
	var b strings.Builder
	for i, c := range completions {
		fmt.Fprintf(&b, "%q\n", prompts[i]+"|"+c)
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(b.String())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reward log:", err)
		os.Exit(2)
	}
}

// TestGRPOOnADatasetWithARewardProgram: a JSONL dataset with its own field names, a verifier and
// an external reward program, from the command line; per-reward metrics under TRL's names and
// the dataset settings saved for --resume.
func TestGRPOOnADatasetWithARewardProgram(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	data := filepath.Join(dir, "sums.jsonl")
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"question": "%d + %d =", "final": " %d", "source": "gen"}`, i%7, i%5, i%7+i%5))
	}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "grpo")
	args := append([]string{"grpo", "--init", sft, "--steps", "2", "--prompts", "2", "--group-size", "3", "--run-dir", runDir,
		"--dataset", data, "--dataset-field", "prompt=question,answer=final", "--reward", "cmd:1,numeric:0.5",
		"--reward-cmd", "VKGRAD_TEST_AS_REWARD=1 " + exe, "--eval-size", "4", "--eval-samples", "0", "--held-out-share", "0.25"}, rlCommon...)
	if out, err := runCLI(args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	metrics, err := os.ReadFile(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rewards/cmd/mean"`, `"rewards/cmd/std"`, `"rewards/numeric/mean"`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(runDir, "config.json"))
	if !strings.Contains(string(cfg), `"dataset": "`+data+`"`) || !strings.Contains(string(cfg), `"reward_cmd"`) {
		t.Errorf("config.json does not record the dataset and reward program:\n%s", cfg)
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"--reward", "cmd:1"}},                             // cmd without a program
		{[]string{"--reward", "bleu"}},                              // unknown verifier
		{[]string{"--dataset-field", "input=question"}},             // unknown role
		{[]string{"--reward-cmd", "true", "--reward", "numeric:1"}}, // a program with no weight
	} {
		a := append([]string{"grpo", "--init", sft, "--steps", "1", "--run-dir", filepath.Join(dir, "bad"), "--dataset", data,
			"--dataset-field", "prompt=question,answer=final"}, rlCommon...)
		if _, err := runCLI(append(a, bad.args...)...); err == nil {
			t.Errorf("%v should be refused", bad.args)
		}
	}
}
