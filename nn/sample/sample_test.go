package sample

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
)

// TestScoreMatchesOracle checks temperature and top-k/top-p truncation against the shared
// logprobs oracles, so sampling and the RL loss agree on which tokens were possible.
func TestScoreMatchesOracle(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testutil.FixturesDir(t), "rl", "logprobs_*.json"))
	if len(files) == 0 {
		t.Fatal("no logprobs fixtures")
	}
	for _, f := range files {
		var c struct {
			Name   string
			Config struct {
				Temperature float32 `json:"temperature"`
				TopK        int     `json:"top_k"`
				TopP        float32 `json:"top_p"`
			}
			Inputs struct {
				Logits [][]float32
				Tokens []int32
			}
			Expected struct {
				Logprobs          []float64  `json:"logprobs"`
				TruncatedLogprobs []*float64 `json:"truncated_logprobs"`
			}
			Tolerance struct{ Abs, Rel float64 }
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		topP := c.Config.TopP
		if topP == 0 {
			topP = 1
		}
		p, err := NewPicker(Options{Temperature: c.Config.Temperature, TopK: c.Config.TopK, TopP: topP})
		if err != nil {
			t.Fatal(err)
		}
		for i, tok := range c.Inputs.Tokens {
			lp, tlp, kept := p.Score(c.Inputs.Logits[i], len(c.Inputs.Logits[i]), tok)
			tol := func(want float64) float64 { return c.Tolerance.Abs + c.Tolerance.Rel*math.Abs(want) + 1e-6 }
			if want := c.Expected.Logprobs[i]; math.Abs(lp-want) > tol(want) {
				t.Errorf("%s[%d]: logp %v, want %v", c.Name, i, lp, want)
			}
			want := c.Expected.TruncatedLogprobs[i]
			if (want == nil) == kept {
				t.Errorf("%s[%d]: kept=%v, oracle truncated logp %v", c.Name, i, kept, want)
			} else if want != nil && math.Abs(tlp-*want) > tol(*want) {
				t.Errorf("%s[%d]: truncated logp %v, want %v", c.Name, i, tlp, *want)
			}
		}
	}
}

func TestPickDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, 3, -1}
	p, _ := NewPicker(Options{Temperature: 1, TopP: 1})
	r := rng.New(3)
	counts := make([]int, len(logits))
	const n = 100000
	for i := 0; i < n; i++ {
		counts[p.Pick(logits, len(logits), r).Token]++
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	for i, l := range logits {
		want := math.Exp(float64(l)) / z
		if got := float64(counts[i]) / n; math.Abs(got-want) > 0.006 {
			t.Errorf("token %d drawn %.4f of the time, want %.4f", i, got, want)
		}
	}
	// top-k 2 only ever draws the two largest logits.
	pk, _ := NewPicker(Options{Temperature: 1, TopK: 2, TopP: 1})
	for i := 0; i < 1000; i++ {
		if tok := pk.Pick(logits, len(logits), r).Token; tok != 3 && tok != 1 {
			t.Fatalf("top-k 2 drew token %d", tok)
		}
	}
	g, _ := NewPicker(Options{Temperature: 0, TopP: 1})
	if tok := g.Pick(logits, len(logits), r).Token; tok != 3 {
		t.Errorf("greedy picked %d, want 3", tok)
	}
	for _, bad := range []Options{{Temperature: -1, TopP: 1}, {TopK: -1, TopP: 1}, {TopP: 0}, {TopP: 1.5}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
