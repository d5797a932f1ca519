// Package sample draws tokens from a language model's logits and generates continuations.
//
// # Drawing a token
//
// A [Picker], made by [NewPicker] from [Options] (temperature, top-k, top-p), draws one token
// from a row of logits given a uniform number, so a seeded [RNG] fixes every draw.
// [CheckLogits] refuses logits that cannot be sampled. The RL rollouts sample with it too, so
// each [Pick] also reports what the loss needs to score the token the way it was drawn: its
// log-probability under the full and under the truncated distribution, and a logit cutoff
// that reproduces the truncation ([NoCutoff] when nothing was cut).
//
// # Generating
//
// Generation runs on a model's key/value-cache decoder, a GPT-2's or a Llama-family model's.
// [Generate] continues prompts of equal length, one per decoder row. [GenerateBatch] serves a
// list of [Request] values on a [RowDecoder]'s rows with continuous batching, prefilling a
// group's shared prompt once and forking it to the group's other rows.
package sample

import (
	"fmt"
	"math"
	"slices"
)

// Options control how a token is drawn.
type Options struct {
	// Temperature divides the logits; 0 means greedy (argmax, first index on ties).
	Temperature float64 `json:"temperature"`
	// TopK keeps the K most likely tokens and the tokens tied with the K-th; 0 keeps all.
	TopK int `json:"top_k"`
	// TopP keeps, after top-k, the smallest most-likely prefix whose renormalised mass reaches
	// TopP, and the tokens tied with its last one; 1 (or 0, the zero value) keeps all. Keeping
	// ties makes every kept set "the tokens whose logit is at least some cutoff" (Pick.Cutoff).
	TopP float64 `json:"top_p"`
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case !(o.Temperature >= 0) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("temperature %v must be a finite number >= 0", o.Temperature)
	case o.TopK < 0:
		return fmt.Errorf("top-k %d must be >= 0", o.TopK)
	case !(o.TopP >= 0 && o.TopP <= 1):
		return fmt.Errorf("top-p %v must be in [0, 1] (0 and 1 keep every token)", o.TopP)
	}
	return nil
}

// Truncates reports whether top-k or top-p can drop tokens.
func (o Options) Truncates() bool { return o.TopK > 0 || o.nucleus() }

// nucleus reports whether top-p truncates (0, the zero value, keeps all like 1).
func (o Options) nucleus() bool { return o.TopP > 0 && o.TopP < 1 }

// Pick is the outcome of one draw. A greedy pick is certain: its log-probabilities are 0, Kept
// is 1 and Cutoff is -Inf.
type Pick struct {
	// Token is the token drawn.
	Token int32
	// LogProb is the token's log-probability under softmax(logits/T) over the whole vocabulary,
	// the quantity a policy-gradient loss uses.
	LogProb float64
	// TruncLogProb is its log-probability under the distribution actually sampled from
	// (renormalised over the kept set).
	TruncLogProb float64
	// Kept is the size of the kept set: V when top-k and top-p are off.
	Kept int
	// Cutoff is a raw logit (before the temperature) such that the kept set is exactly
	// {v : logits[v] >= Cutoff}: what LogSoftmaxGather needs to replay the truncation. -Inf
	// when nothing was truncated.
	Cutoff float32
}

// negligible is how far below the largest scaled logit a token may lie and still be looked at:
// e^-60 relative to the mode, so all the skipped tokens of a 50k vocabulary together weigh
// less than 1e-21 of the mass, far under float64 rounding of the normaliser.
const negligible = 60

// NoCutoff is the Cutoff of a draw that truncated nothing.
var NoCutoff = float32(math.Inf(-1))

// Picker draws tokens: temperature, then top-k, then top-p, and CDF inversion in token order
// over the kept set. It uses a fast exponential and skips the tokens more than `negligible`
// below the mode, since the exponentials of a 50k vocabulary are most of the cost of sampling.
// It keeps scratch space so repeated draws do not allocate; use one Picker per goroutine.
type Picker struct {
	opt  Options
	p    []float64 // unnormalised probabilities, by token
	vals []float64 // the nonzero ones, reordered
	kept []int
}

// NewPicker validates the options.
func NewPicker(opt Options) (*Picker, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Picker{opt: opt}, nil
}

// CheckLogits returns an error when the first V logits cannot be sampled: a NaN or +Inf
// among them, or all of them -Inf. A model whose weights or activations went non-finite makes
// such logits; picking from them would be a made-up token.
func CheckLogits(logits []float32, V int) error {
	if V <= 0 || V > len(logits) {
		return fmt.Errorf("%d logits for a vocabulary of %d", len(logits), V)
	}
	finite := false
	for v, x := range logits[:V] {
		switch {
		case x != x:
			return fmt.Errorf("logit of token %d is NaN (the model's weights or activations are not finite)", v)
		case math.IsInf(float64(x), 1):
			return fmt.Errorf("logit of token %d is +Inf (the model's weights or activations overflowed)", v)
		case !math.IsInf(float64(x), -1):
			finite = true
		}
	}
	if !finite {
		return fmt.Errorf("every logit is -Inf: no token can be drawn")
	}
	return nil
}

// Pick draws one token from the first V logits, inverting the CDF at u, a uniform draw in
// [0, 1) (ignored when greedy). The logits must pass CheckLogits.
func (pk *Picker) Pick(logits []float32, V int, u float64) Pick {
	if pk.opt.Temperature == 0 {
		best := 0
		for v := 1; v < V; v++ {
			if logits[v] > logits[best] {
				best = v
			}
		}
		return Pick{Token: int32(best), Kept: 1, Cutoff: NoCutoff}
	}
	invT := 1 / pk.opt.Temperature
	p, sum, logZ := pk.weigh(logits, V, invT)
	if !pk.opt.Truncates() {
		target := u * sum
		var acc float64
		choice := -1
		for v, e := range p {
			if e == 0 {
				continue
			}
			choice = v
			acc += e
			if target < acc {
				break
			}
		}
		lp := float64(logits[choice])*invT - logZ
		return Pick{Token: int32(choice), LogProb: lp, TruncLogProb: lp, Kept: V, Cutoff: NoCutoff}
	}
	kept := pk.truncate(p)
	var mass float64
	for _, v := range kept {
		mass += p[v]
	}
	target := u * mass
	var acc float64
	choice := kept[len(kept)-1]
	for _, v := range kept {
		acc += p[v]
		if target < acc {
			choice = v
			break
		}
	}
	lp := float64(logits[choice])*invT - logZ
	return Pick{Token: int32(choice), LogProb: lp, TruncLogProb: lp - math.Log(mass/sum), Kept: len(kept),
		Cutoff: keptCutoff(logits[:V], kept)}
}

// weigh returns the unnormalised probabilities e^(logit/T - max/T) of the first V logits (0 for
// the tokens more than negligible below the mode), their sum and the log of the normaliser of
// softmax(logits/T).
func (pk *Picker) weigh(logits []float32, V int, invT float64) (p []float64, sum, logZ float64) {
	top := logits[0]
	for _, l := range logits[1:V] {
		if l > top {
			top = l
		}
	}
	mx := float64(top) * invT
	cutLogit := float32((mx - negligible) / invT)
	if cap(pk.p) < V {
		pk.p = make([]float64, V)
	}
	p = pk.p[:V]
	for v, l := range logits[:V] {
		e := 0.0
		if l >= cutLogit {
			e = expNeg(float64(l)*invT - mx)
		}
		p[v] = e
		sum += e
	}
	return p, sum, mx + math.Log(sum)
}

// truncate returns the kept tokens (top-k with ties at the k-th value, then top-p) in token
// order. Both cuts keep ties, so the kept set is the tokens at or above some probability, found
// from the probabilities alone: a linear-time selection for top-k, and for top-p a sort of the
// candidates, only the top-k ones when there is a top-k. Tied values add up the same in any
// order, so the top-p sums are those of a sort of the tokens by descending probability.
func (pk *Picker) truncate(p []float64) []int {
	vals := pk.vals[:0]
	for _, e := range p {
		if e > 0 {
			vals = append(vals, e)
		}
	}
	pk.vals = vals
	cut := 0.0 // the smallest kept probability; 0 keeps every token looked at
	if k := pk.opt.TopK; k > 0 && k < len(vals) {
		cut = kthLargest(vals, k)
		n := 0
		for _, e := range vals {
			if e >= cut {
				vals[n] = e
				n++
			}
		}
		vals = vals[:n]
	}
	if pk.opt.nucleus() {
		slices.Sort(vals)
		var z float64
		for i := len(vals) - 1; i >= 0; i-- {
			z += vals[i]
		}
		var cum float64
		for i := len(vals) - 1; i >= 0; i-- {
			cum += vals[i] / z
			if cum >= pk.opt.TopP {
				cut = vals[i]
				break
			}
		}
	}
	kept := pk.kept[:0]
	for v, e := range p {
		if e > 0 && e >= cut {
			kept = append(kept, v)
		}
	}
	pk.kept = kept
	return kept
}

// kthLargest returns the k-th largest of a (k from 1), reordering a: quickselect with a
// three-way partition, so runs of ties cost no more than distinct values.
func kthLargest(a []float64, k int) float64 {
	lo, hi, want := 0, len(a), k-1 // a[want] in descending order lies in a[lo:hi]
	for hi-lo > 1 {
		x, y, z := a[lo], a[lo+(hi-lo)/2], a[hi-1]
		pivot := max(min(x, y), min(max(x, y), z)) // median of three
		lt, i, gt := lo, lo, hi                    // a[lo:lt] > pivot, a[lt:i] == pivot, a[gt:hi] < pivot
		for i < gt {
			switch {
			case a[i] > pivot:
				a[lt], a[i] = a[i], a[lt]
				lt++
				i++
			case a[i] < pivot:
				gt--
				a[i], a[gt] = a[gt], a[i]
			default:
				i++
			}
		}
		switch {
		case want < lt:
			hi = lt
		case want >= gt:
			lo = gt
		default:
			return pivot
		}
	}
	return a[lo]
}

// keptCutoff returns a logit c with {v : logits[v] >= c} = kept (token ids, ascending), or -Inf
// when every token is kept. The kept set of temperature, top-k and top-p (both keeping ties) is
// the tokens at or above its smallest logit lo; c is the midpoint between lo and the largest
// excluded logit hi, so logits recomputed with a rounding difference (a full forward pass
// instead of the KV-cache decoder) below half the gap still select the same set. Where lo and
// hi are adjacent floats the midpoint rounds to one of them and c is lo.
func keptCutoff(logits []float32, kept []int) float32 {
	if len(kept) == len(logits) {
		return NoCutoff
	}
	lo := float32(math.Inf(1))
	hi := float32(math.Inf(-1))
	k := 0
	for v, l := range logits {
		if k < len(kept) && kept[k] == v {
			lo = min(lo, l)
			k++
			continue
		}
		hi = max(hi, l)
	}
	c := float32((float64(lo) + float64(hi)) / 2)
	if !(c > hi) || c > lo {
		c = lo
	}
	return c
}

// expNeg is e^x for x <= 0 to about 1e-13 relative error: x = k ln2 + r with |r| <= ln2/2,
// e^r by its Taylor series to r^12, times 2^k; about four times faster than math.Exp, which is
// most of the cost of sampling from a 50k vocabulary.
func expNeg(x float64) float64 {
	if x < -708 {
		return 0
	}
	const ln2Hi, ln2Lo, invLn2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
	k := math.Floor(x*invLn2 + 0.5)
	r := (x - k*ln2Hi) - k*ln2Lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320+r*(1.0/362880+
		r*(1.0/3628800+r*(1.0/39916800+r*(1.0/479001600))))))))))))
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}
