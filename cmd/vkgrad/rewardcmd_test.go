package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultRewardProgramBanner: a reward program that prints one line before its first reply
// ends grpo and ppo with the stray line quoted, instead of pairing every later batch with the
// previous batch's rewards.
func TestFaultRewardProgramBanner(t *testing.T) {
	dir := t.TempDir()
	sft := tinySFT(t, dir)
	data := filepath.Join(dir, "sums.jsonl")
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"prompt": "%d + %d =", "answer": " %d"}`, i%7, i%5, i%7+i%5))
	}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	banner := `{"rewards": [0, 0, 0, 0, 0, 0]}`
	prog := fmt.Sprintf("echo '%s'; VKGRAD_TEST_AS_REWARD=1 exec %q", banner, exe)
	for _, cmd := range []string{"grpo", "ppo"} {
		args := append([]string{cmd, "--init", sft, "--steps", "3", "--prompts", "2", "--group-size", "3", "--run-dir", filepath.Join(dir, cmd),
			"--dataset", data, "--reward-cmd", prog, "--eval-samples", "0", "--held-out-share", "0.25"}, rlCommon...)
		out, err := runCLI(args...)
		if err == nil || !strings.Contains(err.Error(), "with no request waiting") { // the banner, or the reply it displaced
			t.Errorf("%s: %v\n%s", cmd, err, out)
		}
	}
}
