package objective

import (
	"fmt"
	"math"
	"sort"
)

// Sampling describes how the sampler turns logits into a distribution. The loss must use the
// same temperature (and, with truncated log-probs, the same top-k/top-p) as the sampler, or
// the first-iteration ratio is not 1 and the objective optimises a different distribution
// from the one that produced the rollouts. Its fields are nn/sample's Options, which this
// standard-library package cannot import: rl converts the sampler's settings to it, and rl's
// TestPickerMatchesSampleToken checks that both draw the same token.
type Sampling struct {
	// Temperature divides the logits before the softmax; > 0.
	Temperature float64 `json:"temperature"`
	// TopK keeps the K most probable tokens (ties at the K-th value are kept); 0 disables.
	TopK int `json:"top_k"`
	// TopP keeps, after top-k, the smallest prefix of the tokens in descending probability whose
	// cumulative (renormalised) mass reaches TopP, and the tokens tied with its last one; 1
	// disables. In (0, 1]. Keeping ties makes the kept set always "every token whose logit is
	// at least some cutoff", which the loss can replay exactly (rl.TrainConfig.ReplayTruncation).
	TopP float64 `json:"top_p"`
}

// Validate names the first bad field.
func (s Sampling) Validate() error {
	if !(s.Temperature > 0) || math.IsInf(s.Temperature, 0) {
		return fmt.Errorf("temperature %v: want a finite value > 0", s.Temperature)
	}
	if s.TopK < 0 {
		return fmt.Errorf("top_k %d: want >= 0 (0 disables)", s.TopK)
	}
	if !(s.TopP > 0 && s.TopP <= 1) {
		return fmt.Errorf("top_p %v: want a value in (0, 1] (1 disables)", s.TopP)
	}
	return nil
}

// LogSoftmax writes log_softmax(logits / temperature) into out (allocated when nil or short)
// and returns it.
func LogSoftmax(out, logits []float64, temperature float64) []float64 {
	if cap(out) < len(logits) {
		out = make([]float64, len(logits))
	}
	out = out[:len(logits)]
	mx := math.Inf(-1)
	for _, l := range logits {
		if l/temperature > mx {
			mx = l / temperature
		}
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(l/temperature - mx)
	}
	lz := mx + math.Log(z)
	for i, l := range logits {
		out[i] = l/temperature - lz
	}
	return out
}

// EntropyFromLogProbs returns -sum p log p of a normalised log-distribution; entries at -Inf
// contribute 0.
func EntropyFromLogProbs(lp []float64) float64 {
	var h float64
	for _, l := range lp {
		if !math.IsInf(l, -1) {
			h -= math.Exp(l) * l
		}
	}
	return h
}

// KeptSet marks the tokens that survive top-k then top-p truncation of the distribution with
// log-probs lp (already at the sampling temperature). Both keep the tokens tied with the last
// one they keep, so the set is {v : lp[v] >= lp of its least probable member}.
func KeptSet(keep []bool, lp []float64, topK int, topP float64) []bool {
	n := len(lp)
	if cap(keep) < n {
		keep = make([]bool, n)
	}
	keep = keep[:n]
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return lp[idx[a]] > lp[idx[b]] })
	m := n // number kept after top-k
	if topK > 0 && topK < n {
		kth := lp[idx[topK-1]]
		m = topK
		for m < n && lp[idx[m]] == kth {
			m++
		}
	}
	if topP < 1 {
		// Renormalise over the top-k set, then take the smallest prefix reaching topP.
		var z float64
		for _, i := range idx[:m] {
			z += math.Exp(lp[i])
		}
		var cum float64
		for j, i := range idx[:m] {
			cum += math.Exp(lp[i]) / z
			if cum >= topP {
				for m = j + 1; m < n && lp[idx[m]] == lp[i]; m++ { // keep ties at the cut
				}
				break
			}
		}
	}
	for i := range keep {
		keep[i] = false
	}
	for _, i := range idx[:m] {
		keep[i] = true
	}
	return keep
}

// TokenLogProbs holds per-position log-probs of sampled tokens.
type TokenLogProbs struct {
	// LogProbs is log_softmax(logits / temperature) at the sampled token.
	LogProbs []float64
	// Truncated is the log-prob under the top-k/top-p truncated, renormalised distribution the
	// sampler drew from; NaN where the token lies outside the kept set.
	Truncated []float64
	// Entropy is the entropy of the full (untruncated) distribution at the temperature.
	Entropy []float64
}

// ComputeTokenLogProbs evaluates, for each position t, the sampled token tokens[t] under the
// distribution logits[t] at the sampling settings s.
func ComputeTokenLogProbs(logits [][]float64, tokens []int, s Sampling) (TokenLogProbs, error) {
	var r TokenLogProbs
	if err := s.Validate(); err != nil {
		return r, err
	}
	if len(tokens) != len(logits) {
		return r, fmt.Errorf("tokens: %d positions, logits has %d", len(tokens), len(logits))
	}
	r.LogProbs = make([]float64, len(tokens))
	r.Truncated = make([]float64, len(tokens))
	r.Entropy = make([]float64, len(tokens))
	var lp []float64
	var keep []bool
	for t, row := range logits {
		if len(row) == 0 {
			return r, fmt.Errorf("logits[%d]: empty vocabulary", t)
		}
		for v, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 1) {
				return r, fmt.Errorf("logits[%d][%d] is %v", t, v, x)
			}
		}
		tok := tokens[t]
		if tok < 0 || tok >= len(row) {
			return r, fmt.Errorf("tokens[%d] = %d: outside the vocabulary [0, %d)", t, tok, len(row))
		}
		lp = LogSoftmax(lp, row, s.Temperature)
		r.LogProbs[t] = lp[tok]
		r.Entropy[t] = EntropyFromLogProbs(lp)
		keep = KeptSet(keep, lp, s.TopK, s.TopP)
		if !keep[tok] {
			r.Truncated[t] = math.NaN()
			continue
		}
		var z float64
		for v, k := range keep {
			if k {
				z += math.Exp(lp[v])
			}
		}
		r.Truncated[t] = lp[tok] - math.Log(z)
	}
	return r, nil
}

// SampledToken is a token drawn by SampleToken with its log-probs.
type SampledToken struct {
	Token     int
	LogProb   float64 // under the full distribution at the temperature
	Truncated float64 // under the truncated, renormalised distribution it was drawn from
}

// SampleToken draws a token from logits at the sampling settings s by inverting the CDF of
// the top-k/top-p truncated distribution at u in [0, 1). A sampler that uses it draws from
// exactly the distribution ComputeTokenLogProbs describes, so the loss's log-probs match.
func SampleToken(logits []float64, s Sampling, u float64) (SampledToken, error) {
	if err := s.Validate(); err != nil {
		return SampledToken{}, err
	}
	if len(logits) == 0 {
		return SampledToken{}, fmt.Errorf("logits: empty vocabulary")
	}
	if !(u >= 0 && u < 1) {
		return SampledToken{}, fmt.Errorf("uniform draw %v: want a value in [0, 1)", u)
	}
	for v, x := range logits {
		if math.IsNaN(x) || math.IsInf(x, 1) {
			return SampledToken{}, fmt.Errorf("logits[%d] is %v", v, x)
		}
	}
	lp := LogSoftmax(nil, logits, s.Temperature)
	keep := KeptSet(nil, lp, s.TopK, s.TopP)
	var z float64
	last := -1
	for v, k := range keep {
		if k {
			z += math.Exp(lp[v])
			last = v
		}
	}
	target := u * z
	var cum float64
	tok := last // guards against rounding leaving target beyond the final cumulative sum
	for v, k := range keep {
		if !k {
			continue
		}
		cum += math.Exp(lp[v])
		if target < cum {
			tok = v
			break
		}
	}
	return SampledToken{Token: tok, LogProb: lp[tok], Truncated: lp[tok] - math.Log(z)}, nil
}
