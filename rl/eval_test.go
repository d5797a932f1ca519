package rl

import (
	"math"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/nn"
)

// Evaluate gives the same answers and figures on any number of slots, reports every answer's
// end to Progress once (greedy and sampled together, ending at the total), and the greedy
// accuracy's standard error.
func TestEvaluateWidthProgressAndStandardError(t *testing.T) {
	src := toyPrompts(false)
	prompts := make([]Prompt, 6)
	for i := range prompts {
		prompts[i], _ = src.Next()
		prompts[i].Meta = Meta{"task": "toy", "answer": prompts[i].Answer}
	}
	exact, err := NewCombined(Weighted{Reward: exactMatch{Field: "answer", RequireEOS: false}, Weight: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := nn.GPT2(toyModel(t, 5))
	var results []*EvalResult
	for _, width := range []int{0, 1, 4} {
		var seen []int
		cfg := EvalConfig{MaxNewTokens: 4, EOS: toyEOS, Success: 1, Samples: 2, Sampling: Sampling{Temperature: 1, TopP: 1}, Seed: 3,
			GenBatch: width, Progress: func(done, total int) {
				if total != 18 {
					t.Fatalf("progress total %d, want 6 greedy + 12 sampled", total)
				}
				seen = append(seen, done)
			}}
		res, err := Evaluate(m, toy, prompts, exact, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, 18)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("width %d: progress %v, want 1..18", width, seen)
		}
		results = append(results, res)
	}
	for i, r := range results[1:] {
		if !slices.Equal(r.Answers, results[0].Answers) || r.EvalTask != results[0].EvalTask {
			t.Fatalf("width %d: %+v %q, want %+v %q as with a slot per row", []int{1, 4}[i], r.EvalTask, r.Answers, results[0].EvalTask, results[0].Answers)
		}
	}
	r := results[0]
	if want := math.Sqrt(r.Accuracy * (1 - r.Accuracy) / 6); r.AccuracySE != want || r.ByTask["toy"].AccuracySE != want {
		t.Fatalf("standard error %v (toy %v), want %v", r.AccuracySE, r.ByTask["toy"].AccuracySE, want)
	}
}
