package objective

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/rng"
)

func TestKeptSetBruteForce(t *testing.T) {
	r := rng.New(3)
	for trial := 0; trial < 200; trial++ {
		V := 2 + r.Intn(12)
		logits := make([]float64, V)
		for i := range logits {
			logits[i] = 2 * r.Normal()
		}
		temp := 0.3 + 1.5*r.Float64()
		k := r.Intn(V + 2)
		p := 0.05 + 0.95*r.Float64()
		lp := LogSoftmax(nil, logits, temp)
		keep := KeptSet(nil, lp, k, p)
		// Brute force: rank by probability (ties impossible with random normals).
		rank := func(i int) int {
			n := 0
			for j := range lp {
				if lp[j] > lp[i] {
					n++
				}
			}
			return n
		}
		m := V
		if k > 0 && k < V {
			m = k
		}
		var z float64
		for i := range lp {
			if rank(i) < m {
				z += math.Exp(lp[i])
			}
		}
		for i := range lp {
			if rank(i) >= m {
				if keep[i] {
					t.Fatalf("trial %d: token %d outside top-%d kept", trial, i, k)
				}
				continue
			}
			// Kept iff the mass of strictly more probable tokens in the top-k set is < p.
			var before float64
			for j := range lp {
				if rank(j) < rank(i) {
					before += math.Exp(lp[j]) / z
				}
			}
			if want := before < p || p >= 1; keep[i] != want {
				t.Fatalf("trial %d: token %d kept=%v, mass before %v, top_p %v", trial, i, keep[i], before, p)
			}
		}
	}
}

// Top-p 0.3 over three tied tokens of 1/3 each: the first reaches 0.3, its ties come along, so
// the kept set is the tokens at or above a cutoff, as the sampler's.
func TestKeptSetKeepsTopPTies(t *testing.T) {
	lp := LogSoftmax(nil, []float64{0, 0, 0, -5}, 1)
	keep := KeptSet(nil, lp, 0, 0.3)
	if !keep[0] || !keep[1] || !keep[2] || keep[3] {
		t.Fatalf("top-p 0.3 over ties kept %v, want the three tied tokens", keep)
	}
}

func TestTokenLogProbsConsistency(t *testing.T) {
	logits := [][]float64{{1, 2, 3, 0.5}, {0, 0, 0, 0}}
	full, err := ComputeTokenLogProbs(logits, []int{0, 3}, Sampling{Temperature: 0.5, TopP: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range full.LogProbs {
		if full.LogProbs[i] != full.Truncated[i] {
			t.Errorf("without truncation: %v != %v", full.LogProbs[i], full.Truncated[i])
		}
	}
	// Temperature 0.5 doubles the logits.
	want := 2 - math.Log(math.Exp(2)+math.Exp(4)+math.Exp(6)+math.Exp(1))
	if math.Abs(full.LogProbs[0]-want) > 1e-12 {
		t.Errorf("logprob %v, want %v", full.LogProbs[0], want)
	}
	if math.Abs(full.Entropy[1]-math.Log(4)) > 1e-12 {
		t.Errorf("uniform entropy %v, want log 4", full.Entropy[1])
	}
	tr, _ := ComputeTokenLogProbs(logits, []int{2, 0}, Sampling{Temperature: 1, TopK: 2, TopP: 1})
	if want := 3 - math.Log(math.Exp(3)+math.Exp(2)); math.Abs(tr.Truncated[0]-want) > 1e-12 {
		t.Errorf("top-2 logprob %v, want %v", tr.Truncated[0], want)
	}
	// Ties at the k-th value are kept: all four uniform tokens survive top-2.
	if math.Abs(tr.Truncated[1]-math.Log(0.25)) > 1e-12 {
		t.Errorf("tied top-k logprob %v, want log 1/4", tr.Truncated[1])
	}
	for _, c := range []struct {
		s    Sampling
		tok  []int
		want string
	}{
		{Sampling{Temperature: 0, TopP: 1}, []int{0, 0}, "temperature"},
		{Sampling{Temperature: 1, TopK: -1, TopP: 1}, []int{0, 0}, "top_k"},
		{Sampling{Temperature: 1, TopP: 0}, []int{0, 0}, "top_p"},
		{Sampling{Temperature: 1, TopP: 1}, []int{0, 4}, "tokens[1]"},
		{Sampling{Temperature: 1, TopP: 1}, []int{0}, "tokens"},
	} {
		if _, err := ComputeTokenLogProbs(logits, c.tok, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want it to name %q", c.s, err, c.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 3, 2, 4}
	for _, c := range [][2]float64{{0, 1}, {1, 5}, {0.5, 3}, {0.1, 1.4}, {0.9, 4.6}, {0.25, 2}} {
		if got := Quantile(xs, c[0]); math.Abs(got-c[1]) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	if xs[0] != 5 {
		t.Error("Quantile sorted its input")
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("empty quantile is not NaN")
	}
}

// Inverting the CDF over an even grid of u reproduces the truncated probabilities to within
// one grid step, and never yields a token outside the kept set.
func TestSampleTokenMatchesTruncatedDistribution(t *testing.T) {
	logits := []float64{0.3, 2.1, -1, 1.7, 0.9, -0.2, 1.2}
	s := Sampling{Temperature: 0.8, TopK: 5, TopP: 0.85}
	const grid = 20000
	counts := make([]int, len(logits))
	for i := 0; i < grid; i++ {
		st, err := SampleToken(logits, s, (float64(i)+0.5)/grid)
		if err != nil {
			t.Fatal(err)
		}
		counts[st.Token]++
	}
	lp := LogSoftmax(nil, logits, s.Temperature)
	keep := KeptSet(nil, lp, s.TopK, s.TopP)
	for v := range logits {
		want := 0.0
		if keep[v] {
			r, _ := ComputeTokenLogProbs([][]float64{logits}, []int{v}, s)
			want = math.Exp(r.Truncated[0])
		}
		if got := float64(counts[v]) / grid; math.Abs(got-want) > 1.0/grid+1e-12 {
			t.Errorf("token %d drawn with frequency %v, truncated probability %v", v, got, want)
		}
	}
	st, _ := SampleToken(logits, s, 0.5)
	r, _ := ComputeTokenLogProbs([][]float64{logits}, []int{st.Token}, s)
	if st.LogProb != r.LogProbs[0] || st.Truncated != r.Truncated[0] {
		t.Errorf("sampled log-probs %+v, computed %v %v", st, r.LogProbs[0], r.Truncated[0])
	}
	if _, err := SampleToken(logits, s, 1); err == nil || !strings.Contains(err.Error(), "uniform") {
		t.Errorf("u=1: err %v", err)
	}
}
