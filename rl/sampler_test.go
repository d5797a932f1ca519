package rl

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/sample"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// The rollouts' sampler, nn/sample's Picker, draws the same token as SampleToken for the same
// uniform draw and reports the same log-probs, although it skips tokens far below the mode.
func TestPickerMatchesSampleToken(t *testing.T) {
	r := rng.New(3)
	const V = 300
	for _, s := range []Sampling{
		{Temperature: 1, TopK: 0, TopP: 1}, {Temperature: 0.7, TopK: 0, TopP: 1}, {Temperature: 1.3, TopK: 5, TopP: 1},
		{Temperature: 1, TopK: 0, TopP: 0.9}, {Temperature: 0.8, TopK: 20, TopP: 0.7}, {Temperature: 1, TopK: 1, TopP: 1},
	} {
		pk, err := sample.NewPicker(samplerOptions(s, false))
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 200; trial++ {
			logits := make([]float32, V)
			f := make([]float64, V)
			spread := []float64{0.5, 3, 40}[trial%3] // 40: most tokens fall below the cut
			for v := range logits {
				logits[v] = float32(spread * r.Normal())
				f[v] = float64(logits[v])
			}
			if trial%7 == 0 { // ties at the top
				logits[5], logits[9] = logits[2], logits[2]
				f[5], f[9] = f[2], f[2]
			}
			u := r.Float64()
			want, err := objective.SampleToken(f, objective.Sampling(s), u)
			if err != nil {
				t.Fatal(err)
			}
			got := pk.Pick(logits, V, u)
			if int(got.Token) != want.Token || math.Abs(got.LogProb-want.LogProb) > 1e-9 || math.Abs(got.TruncLogProb-want.Truncated) > 1e-9 {
				t.Fatalf("%+v trial %d: picker %+v, SampleToken %+v", s, trial, got, want)
			}
		}
	}
	// Greedy decoding (evaluation) ignores the sampling settings, unset ones included.
	if o := samplerOptions(Sampling{}, true); o.Validate() != nil || o.Temperature != 0 {
		t.Fatalf("greedy options %+v: %v", o, o.Validate())
	}
}
