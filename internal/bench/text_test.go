package bench

import (
	"strings"
	"testing"
)

// WriteText writes a train report's settings and keys in a fixed order, whole numbers whole,
// and an RL report as its table of phases.
func TestWriteText(t *testing.T) {
	var b strings.Builder
	WriteText(&b, map[string]any{"bench": "train", "device": "cpu", "preset": "tiny", "precision": "bf16", "recompute": true,
		"steps": 2, "batch": 4, "ms_per_step": 12.34567, "tokens_per_s": 1234.5678})
	want := "train on cpu, preset tiny, bf16 products, recompute\n" +
		"  batch                      4\n  steps                      2\n" +
		"  ms_per_step                12.35\n  tokens_per_s               1234.6\n"
	if b.String() != want {
		t.Errorf("train report:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteText(&b, map[string]any{"bench": "rl", "algo": "grpo", "device": "cpu", "preset": "tiny", "prompts": 1, "group_size": 2,
		"prompt_len": 3, "max_new_tokens": 4, "step_seconds": 1.0,
		"phases": []map[string]any{{"phase": "old_logprobs", "seconds": 0.0, "in": "update"}}})
	if !strings.HasPrefix(b.String(), "rl (grpo) on cpu, preset tiny: 1 prompts x 2 completions, 3 prompt + 4 new tokens\n") ||
		!strings.Contains(b.String(), "  old_logprobs           -  (in update)\n") {
		t.Errorf("rl report:\n%s", b.String())
	}
}
