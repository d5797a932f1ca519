package rl

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// The rollout's picker draws the same token as SampleToken for the same uniform draw and
// reports the same log-probs, although it skips tokens far below the mode.
func TestPickerMatchesSampleToken(t *testing.T) {
	r := rng.New(3)
	const V = 300
	for _, s := range []Sampling{{1, 0, 1}, {0.7, 0, 1}, {1.3, 5, 1}, {1, 0, 0.9}, {0.8, 20, 0.7}, {1, 1, 1}} {
		pk := &picker{s: s}
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
			want, err := SampleToken(f, s, u)
			if err != nil {
				t.Fatal(err)
			}
			got := pk.pick(logits, V, u)
			if got.tok != want.Token || math.Abs(got.logp-want.LogProb) > 1e-9 || math.Abs(got.truncLogp-want.Truncated) > 1e-9 {
				t.Fatalf("%+v trial %d: picker %+v, SampleToken %+v", s, trial, got, want)
			}
		}
	}
	g := &picker{greedy: true}
	if p := g.pick([]float32{1, 3, 3, 2}, 4, 0); p.tok != 1 {
		t.Fatalf("greedy picked %d, want the first maximum 1", p.tok)
	}
}

func TestExpNeg(t *testing.T) {
	for x := -707.9; x <= 0; x += 0.0137 {
		if got, want := expNeg(x), math.Exp(x); math.Abs(got-want) > 1e-13*want {
			t.Fatalf("expNeg(%v) = %v, math.Exp %v", x, got, want)
		}
	}
	if expNeg(-1000) != 0 || expNeg(0) != 1 {
		t.Fatalf("expNeg(-1000) = %v, expNeg(0) = %v", expNeg(-1000), expNeg(0))
	}
}
