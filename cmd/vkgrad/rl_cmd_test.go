package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rlrun"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/load"
	"github.com/vkgrad/vkgrad/rl"
)

// metricLines reads a run's metrics.jsonl lines of one kind.
func metricLines(t *testing.T, dir, kind string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		if m["kind"] == kind {
			out = append(out, m)
		}
	}
	return out
}

// sft, then grpo and ppo from its run directory: each writes a checkpoint, config and one JSON
// line per step with every diagnostic, and the task options carry over from the sft run when
// asked (--init-task).
func TestSFTThenGRPOAndPPO(t *testing.T) {
	dir := t.TempDir()
	sft, grpo, ppo := filepath.Join(dir, "sft"), filepath.Join(dir, "grpo"), filepath.Join(dir, "ppo")
	common := []string{"--device", "cpu", "-q", "--eval-size", "4"}
	out, err := runCLI(append([]string{"sft", "--run-dir", sft, "--steps", "3", "--batch", "4", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3"}, common...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := len(metricLines(t, sft, "sft")); n != 3 {
		t.Fatalf("sft wrote %d step lines, want 3", n)
	}
	out, err = runCLI(append([]string{"grpo", "--init", sft, "--init-task", "--run-dir", grpo, "--steps", "2", "--prompts", "2", "--group-size", "3", "--beta", "0.1", "--mu", "2"}, common...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"reward", "reward_std", "rewards/task/mean", "frac_reward_zero_std", "rewards/task/std", "kl", "kl_share", "clip_ratio/low_mean",
		"clip_ratio/high_mean", "clip_ratio/region_mean", "active_fraction", "clipped_fraction", "ratio_mean_positive_adv",
		"ratio_mean_negative_adv", "ratio_p10", "ratio_p50", "ratio_p90", "entropy", "grad_norm", "advantage_std",
		"loss_token_fraction", "completions/mean_length", "completions/min_length", "completions/max_length", "completions/clipped_ratio",
		"token_alignment", "logp_mismatch_max", "learning_rate", "num_tokens", "action", "step_seconds"}
	if st, err := os.Stat(filepath.Join(grpo, "curves.png")); err != nil || st.Size() == 0 {
		t.Errorf("grpo drew no curves.png at the end: %v", err)
	}
	lines := metricLines(t, grpo, "grpo")
	if len(lines) != 2 {
		t.Fatalf("grpo wrote %d step lines, want 2", len(lines))
	}
	for _, k := range want {
		if _, ok := lines[0][k]; !ok {
			t.Errorf("grpo metrics lack %q: %v", k, lines[0])
		}
	}
	if lines[0]["kl"] != 0.0 || lines[0]["token_alignment"] != 1.0 {
		t.Errorf("grpo step 1: kl %v token_alignment %v, want 0 and 1", lines[0]["kl"], lines[0]["token_alignment"])
	}
	var cfg rlrun.RunMeta
	raw, _ := os.ReadFile(filepath.Join(grpo, "config.json"))
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Tasks.Options.Addition.MaxDigits != 1 || cfg.Tasks.Options.Addition.HeldOutFraction != 0.3 {
		t.Errorf("grpo did not inherit the sft run's task options: %+v", cfg.Tasks.Options.Addition)
	}
	if evals := metricLines(t, grpo, "eval"); len(evals) != 2 {
		t.Errorf("grpo wrote %d eval lines, want before and after", len(evals))
	}

	out, err = runCLI(append([]string{"ppo", "--init", grpo, "--run-dir", ppo, "--steps", "2", "--prompts", "4", "--critic-warmup", "1", "--value-init", "constant", "--value-init-value", "0.01"}, common...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines = metricLines(t, ppo, "ppo")
	if len(lines) != 2 {
		t.Fatalf("ppo wrote %d step lines, want 2", len(lines))
	}
	for _, k := range append(want[:3:3], append(want[4:], "vf_loss", "explained_variance", "vf_clipfrac", "critic_warmup", "kl_coef")...) {
		if _, ok := lines[1][k]; !ok {
			t.Errorf("ppo metrics lack %q", k)
		}
	}
	if lines[0]["critic_warmup"] != 1.0 || lines[1]["critic_warmup"] != 0.0 {
		t.Errorf("critic warm-up flags %v %v, want 1 then 0", lines[0]["critic_warmup"], lines[1]["critic_warmup"])
	}
	l, err := load.Read(ppo)
	if err != nil {
		t.Fatal(err)
	}
	vh := l.State.Extra[rl.ValueHeadExtra]
	if len(vh) != l.Config.Channels+1 || !strings.Contains(l.State.Meta[rl.ValueHeadMeta], `"value_init":"constant"`) {
		t.Fatalf("value head in the checkpoint: %d values, meta %q", len(vh), l.State.Meta[rl.ValueHeadMeta])
	}
	if _, err := checkpoint.Peek(filepath.Join(ppo, load.RunCheckpoint)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ppo, "summary.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestRLCommandErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grpo", "--run-dir", dir}, "--init"},
		{[]string{"sft", "--task", "division", "--run-dir", dir}, "division"},
		{[]string{"sft", "--task", "addition:0", "--run-dir", dir}, "weight"},
		{[]string{"sft", "--max-digits", "12", "--run-dir", dir}, "max_digits"},
		{[]string{"sft", "--steps", "0", "--run-dir", dir}, "steps"},
		{[]string{"sft", "--preset", "tiny", "--run-dir", dir}, "vocabulary"},
	} {
		out, err := runCLI(append(c.args, "--device", "cpu", "-q")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to name %q\n%s", c.args, err, c.want, out)
		}
	}
}

// Every training command takes the same optimizer flags and refuses a bad value naming the
// flag, leaving no run directory behind.
func TestOptimizerFlagsAreCheckedAlike(t *testing.T) {
	dir := t.TempDir()
	sft := filepath.Join(dir, "sft")
	if out, err := runCLI("sft", "--steps", "1", "--batch", "2", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3",
		"--eval-size", "2", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--run-dir", sft); err != nil {
		t.Fatalf("sft: %v\n%s", err, out)
	}
	commands := map[string][]string{
		"train": {"train", "--preset", "gpt2-micro", "--steps", "1"},
		"sft":   {"sft", "--steps", "1", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3", "--eval-size", "2", "--stop-at-accuracy", "0"},
		"grpo":  {"grpo", "--init", sft},
		"ppo":   {"ppo", "--init", sft},
	}
	for name, base := range commands {
		for _, bad := range [][2]string{{"--lr", "Inf"}, {"--min-lr", "-1"}, {"--weight-decay", "NaN"}, {"--clip", "-2"}, {"--warmup", "-3"}} {
			run := filepath.Join(dir, name+bad[0])
			_, err := runCLI(append(append([]string{}, base...), bad[0], bad[1], "--device", "cpu", "-q", "--run-dir", run)...)
			if err == nil || !strings.Contains(err.Error(), bad[0]+" ") {
				t.Errorf("%s %s %s: %v", name, bad[0], bad[1], err)
			}
			if _, serr := os.Stat(run); serr == nil {
				t.Errorf("%s %s %s left %s behind", name, bad[0], bad[1], run)
			}
		}
	}
}

// A rollout too large for the machine is refused before it is allocated, saying what it needs
// and which setting caps it, and leaves no run directory.
func TestRolloutTooLargeForMemory(t *testing.T) {
	dir := t.TempDir()
	sft := filepath.Join(dir, "sft")
	if out, err := runCLI("sft", "--steps", "1", "--batch", "2", "--max-digits", "1", "--min-digits", "1", "--held-out-fraction", "0.3",
		"--eval-size", "2", "--stop-at-accuracy", "0", "--device", "cpu", "-q", "--run-dir", sft); err != nil {
		t.Fatalf("sft: %v\n%s", err, out)
	}
	run := filepath.Join(dir, "grpo")
	_, err := runCLI("grpo", "--init", sft, "--prompts", "20000", "--group-size", "64", "--eval-size", "2", "--device", "cpu", "-q", "--run-dir", run)
	if err == nil || !strings.Contains(err.Error(), "needs") || !strings.Contains(err.Error(), "--gen-batch") {
		t.Errorf("1.28M rows decoded at once: %v", err)
	}
	if _, serr := os.Stat(run); serr == nil {
		t.Errorf("the failed run left %s behind", run)
	}
}
