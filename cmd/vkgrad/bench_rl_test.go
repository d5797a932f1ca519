package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// benchRLReport runs bench rl with args on the CPU and decodes its JSON report.
func benchRLReport(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := runCLI(append([]string{"bench", "rl"}, append(args, "--steps", "1", "--warmup", "1", "--json", "--device", "cpu", "-q")...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out[strings.Index(out, "{"):])), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

// bench rl breaks a step into its phases, each with a positive time (but GRPO's old
// log-probs, which are its first update's forward pass), tokens that follow from the flags
// (every completion runs to --max-new-tokens), fractions of the limits measured in the same
// process, and phases that add up to no more than the step's wall time.
func TestBenchRLJSON(t *testing.T) {
	const prompts, group, P, W = 2, 3, 6, 5
	rows := float64(prompts * group)
	for _, tc := range []struct{ algo, preset string }{{"grpo", "tiny"}, {"ppo", "tiny"}, {"grpo", "qwen3-tiny"}} {
		t.Run(tc.algo+"/"+tc.preset, func(t *testing.T) {
			r := benchRLReport(t, "--algo", tc.algo, "--preset", tc.preset, "--prompts", "2", "--group-size", "3", "--prompt-len", "6", "--max-new-tokens", "5")
			peakG, bw := r["peak_gflops"].(float64), r["read_bandwidth_gb_per_s"].(float64)
			if peakG <= 0 || bw <= 0 || r["peak_rss_bytes"].(float64) <= 0 {
				t.Fatalf("peak %v GFLOP/s, bandwidth %v GB/s, peak RSS %v: want all positive", peakG, bw, r["peak_rss_bytes"])
			}
			phases, _ := r["phases"].([]any)
			want := []string{"prefill", "decode", "reward", "old_logprobs", "reference", "update", "optimizer"}
			if len(phases) != len(want) {
				t.Fatalf("phases %v: want %v", phases, want)
			}
			tokens := map[string]float64{"prefill": prompts * P, "decode": rows * (W - 1), "reward": rows * W, "reference": rows * (P + W - 1),
				"old_logprobs": rows * (P + W - 1), "update": rows * (P + W - 1), "optimizer": rows * W}
			sum := 0.0
			for i, raw := range phases {
				ph := raw.(map[string]any)
				name, s := ph["phase"].(string), ph["seconds"].(float64)
				sum += s
				if name != want[i] {
					t.Fatalf("phase %d is %q, want %q", i, name, want[i])
				}
				if tc.algo == "grpo" && name == "old_logprobs" {
					if s != 0 || ph["in"] != "update" {
						t.Errorf("GRPO's old log-probs: %v, want 0 s in the update", ph)
					}
					continue
				}
				if !(s > 0) || ph["tokens"].(float64) != tokens[name] || !(ph["tokens_per_s"].(float64) > 0) {
					t.Errorf("%s: %v s, %v tokens (want > 0 s and %v tokens)", name, s, ph["tokens"], tokens[name])
				}
				if g, ok := ph["gflops"].(float64); ok && (!(g > 0) || math.Abs(ph["peak_fraction"].(float64)-g/peakG) > 1e-9*g/peakG) {
					t.Errorf("%s: %v GFLOP/s, %v of the peak %v", name, g, ph["peak_fraction"], peakG)
				}
				if gb, ok := ph["gb_per_s"].(float64); ok && (!(gb > 0) || math.Abs(ph["bandwidth_fraction"].(float64)-gb/bw) > 1e-9*gb/bw) {
					t.Errorf("%s: %v GB/s, %v of the bandwidth %v", name, gb, ph["bandwidth_fraction"], bw)
				}
			}
			for _, name := range []string{"prefill", "reference", "update"} {
				if _, ok := phases[slices.Index(want, name)].(map[string]any)["gflops"]; !ok {
					t.Errorf("%s has no GFLOP/s", name)
				}
			}
			if _, ok := phases[1].(map[string]any)["gb_per_s"]; !ok {
				t.Error("decode has no GB/s")
			}
			step := r["step_seconds"].(float64)
			if math.Abs(r["phases_seconds"].(float64)-sum) > 1e-12 || !(sum > 0) || sum > step {
				t.Errorf("phases add up to %v s (reported %v), the step took %v s", sum, r["phases_seconds"], step)
			}
		})
	}
}

// Bad bench rl flags are refused naming the flag.
func TestBenchRLFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "dpo"}, "--algo"},
		{[]string{"--group-size", "0"}, "--group-size"},
		{[]string{"--prompt-len", "60", "--max-new-tokens", "10"}, "--prompt-len 60 + --max-new-tokens 10"},
	} {
		_, err := runCLI(append([]string{"bench", "rl", "--preset", "tiny", "--device", "cpu", "-q"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
