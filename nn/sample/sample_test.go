package sample

import (
	"cmp"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/internal/testutil"
)

// score is what Pick reports for tok, by Pick's own weighing and truncation, and whether the
// truncation keeps tok; Pick cannot report a dropped token, whose full log-prob the oracles
// still give.
func score(pk *Picker, logits []float32, tok int32) (logp, truncLogp float64, kept bool) {
	invT := 1 / pk.opt.Temperature
	p, sum, logZ := pk.weigh(logits, len(logits), invT)
	logp = float64(logits[tok])*invT - logZ
	if !pk.opt.Truncates() {
		return logp, logp, true
	}
	var mass float64
	for _, v := range pk.truncate(p) {
		mass += p[v]
		kept = kept || v == int(tok)
	}
	if !kept {
		return logp, math.Inf(-1), false
	}
	return logp, logp - math.Log(mass/sum), true
}

// drawing returns Pick at the smallest u that draws a token >= tok (the drawn token grows with
// u: CDF inversion in token order), and whether that token is tok.
func drawing(pk *Picker, logits []float32, tok int32) (Pick, bool) {
	lo, hi := 0.0, math.Nextafter(1, 0)
	if got := pk.Pick(logits, len(logits), lo); got.Token >= tok {
		return got, got.Token == tok
	}
	if pk.Pick(logits, len(logits), hi).Token < tok {
		return Pick{}, false
	}
	for range 100 { // Pick(lo) < tok <= Pick(hi)
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if pk.Pick(logits, len(logits), mid).Token < tok {
			lo = mid
		} else {
			hi = mid
		}
	}
	got := pk.Pick(logits, len(logits), hi)
	return got, got.Token == tok
}

// TestPickMatchesOracle checks temperature and top-k/top-p truncation against the shared
// logprobs oracles, so sampling and the RL loss agree on which tokens were possible: each kept
// fixture token is drawn by some u with the oracle's log-probs, no u draws a dropped one.
func TestPickMatchesOracle(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testutil.FixturesDir(t), "rl", "logprobs_*.json"))
	if len(files) == 0 {
		t.Fatal("no logprobs fixtures")
	}
	dropped := 0
	for _, f := range files {
		var c struct {
			Name   string
			Config struct {
				Temperature float64 `json:"temperature"`
				TopK        int     `json:"top_k"`
				TopP        float64 `json:"top_p"`
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
		tol := func(want float64) float64 { return c.Tolerance.Abs + c.Tolerance.Rel*math.Abs(want) + 1e-6 }
		for i, tok := range c.Inputs.Tokens {
			logits := c.Inputs.Logits[i]
			lp, tlp, kept := score(p, logits, tok)
			want := c.Expected.TruncatedLogprobs[i]
			if wantLp := c.Expected.Logprobs[i]; math.Abs(lp-wantLp) > tol(wantLp) {
				t.Errorf("%s[%d]: logp %v, want %v", c.Name, i, lp, wantLp)
			}
			pk, drawn := drawing(p, logits, tok)
			if (want == nil) == kept || drawn != kept {
				t.Errorf("%s[%d]: kept=%v drawn=%v, oracle truncated logp %v", c.Name, i, kept, drawn, want)
				continue
			}
			if want == nil {
				dropped++
				continue
			}
			if math.Abs(tlp-*want) > tol(*want) {
				t.Errorf("%s[%d]: truncated logp %v, want %v", c.Name, i, tlp, *want)
			}
			if pk.LogProb != lp || pk.TruncLogProb != tlp {
				t.Errorf("%s[%d]: Pick drew it with logp %v trunc %v, score %v %v", c.Name, i, pk.LogProb, pk.TruncLogProb, lp, tlp)
			}
		}
	}
	if dropped == 0 {
		t.Error("no fixture token is dropped by the truncation")
	}
}

func TestPickDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, 3, -1}
	p, _ := NewPicker(Options{Temperature: 1, TopP: 1})
	r := rng.New(3)
	counts := make([]int, len(logits))
	const n = 100000
	for i := 0; i < n; i++ {
		counts[p.Pick(logits, len(logits), r.Float64()).Token]++
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
		if tok := pk.Pick(logits, len(logits), r.Float64()).Token; tok != 3 && tok != 1 {
			t.Fatalf("top-k 2 drew token %d", tok)
		}
	}
	g, _ := NewPicker(Options{Temperature: 0, TopP: 1})
	if got := g.Pick(logits, len(logits), 0.9); got != (Pick{Token: 3, Kept: 1, Cutoff: NoCutoff}) {
		t.Errorf("greedy pick %+v, want token 3", got)
	}
	if got := g.Pick([]float32{1, 3, 3, 2}, 4, 0); got.Token != 1 {
		t.Errorf("greedy picked %d, want the first maximum 1", got.Token)
	}
	for _, bad := range []Options{{Temperature: -1, TopP: 1}, {TopK: -1, TopP: 1}, {TopP: -0.1}, {TopP: 1.5}, {Temperature: math.Inf(1), TopP: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// keptSetOf returns the token ids the picker kept for logits (ascending).
func keptSetOf(pk *Picker, logits []float32) []int {
	pk.Pick(logits, len(logits), 0.5)
	return append([]int(nil), pk.kept...)
}

// The cutoff selects exactly the kept set, ties included, for random logits of every spread,
// and top-p keeps the tokens tied with the last one it keeps.
func TestCutoffSelectsTheKeptSet(t *testing.T) {
	r := rng.New(5)
	const V = 200
	truncated := 0
	for _, o := range []Options{{1, 5, 1}, {0.7, 0, 0.6}, {1.3, 20, 0.9}, {1, 1, 1}, {0.5, 3, 0.3}} {
		pk, err := NewPicker(o)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 300; trial++ {
			logits := make([]float32, V)
			spread := []float64{0.5, 3, 40}[trial%3]
			for v := range logits {
				logits[v] = float32(spread * r.Normal())
			}
			if trial%4 == 0 { // ties, at the top and around the cut
				s := slices.Clone(logits)
				slices.SortFunc(s, func(a, b float32) int { return cmp.Compare(b, a) })
				for v := range logits {
					for _, k := range []int{0, 2, 4, 10} {
						if logits[v] == s[k+1] {
							logits[v] = s[k]
						}
					}
				}
			}
			p := pk.Pick(logits, V, r.Float64())
			kept := keptSetOf(pk, logits)
			if p.Kept < V {
				truncated++
			}
			if len(kept) == V {
				if !math.IsInf(float64(p.Cutoff), -1) {
					t.Fatalf("%+v trial %d: nothing truncated, cutoff %v", o, trial, p.Cutoff)
				}
				continue
			}
			in := map[int]bool{}
			for _, v := range kept {
				in[v] = true
			}
			for v, l := range logits {
				if (l >= p.Cutoff) != in[v] {
					t.Fatalf("%+v trial %d: token %d (logit %v) kept=%v, cutoff %v", o, trial, v, l, in[v], p.Cutoff)
				}
			}
		}
	}
	if truncated == 0 {
		t.Fatal("no draw was truncated")
	}
	// Top-p 0.3 over three tied tokens of 1/3 each: the first reaches 0.3, its ties come along.
	if kept := keptSetOf(&Picker{opt: Options{Temperature: 1, TopP: 0.3}}, []float32{0, 0, 0, -5}); len(kept) != 3 {
		t.Fatalf("top-p 0.3 over ties kept %v, want the three tied tokens", kept)
	}
	if c := keptCutoff([]float32{1, 2, 3}, []int{2}); !(c > 2 && c < 3) {
		t.Fatalf("cutoff between 2 and 3: %v", c)
	}
	if c := keptCutoff([]float32{1, math.Nextafter32(1, 2)}, []int{1}); c != math.Nextafter32(1, 2) {
		t.Fatalf("adjacent floats: cutoff %v, want the kept logit", c)
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

func TestKthLargest(t *testing.T) {
	r := rng.New(9)
	for trial := 0; trial < 500; trial++ {
		a := make([]float64, 1+r.Intn(300))
		for i := range a {
			a[i] = r.Normal()
			if trial%2 == 0 { // runs of ties
				a[i] = float64(r.Intn(5))
			}
		}
		sorted := slices.Clone(a)
		slices.SortFunc(sorted, func(x, y float64) int { return cmp.Compare(y, x) })
		k := 1 + r.Intn(len(a))
		if got := kthLargest(a, k); got != sorted[k-1] {
			t.Fatalf("trial %d: %d-th largest %v, want %v", trial, k, got, sorted[k-1])
		}
	}
}
