package rl

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// negligible is how far below the largest scaled logit a token may lie and still be looked at:
// e^-60 relative to the mode, so all the skipped tokens of a 50k vocabulary together weigh
// less than 1e-21 of the mass, far under float64 rounding of the normaliser.
const negligible = 60

// picker draws tokens as SampleToken does (temperature, then top-k keeping ties at the k-th
// value, then top-p over the renormalised rest; CDF inversion in token order), with a faster
// exponential and skipping the tokens more than `negligible` below the mode: the exponentials
// of a 50k vocabulary are most of a rollout's cost.
type picker struct {
	s      Sampling
	greedy bool
	p      []float64 // unnormalised probabilities, by token
	order  []int
	kept   []int
}

type pick struct {
	tok             int
	logp, truncLogp float64
	kept            int
	// cutoff is a raw logit (before the temperature) such that the kept set is exactly
	// {v : logits[v] >= cutoff}: what LogSoftmaxGather needs to replay the truncation. -Inf
	// when nothing was truncated.
	cutoff float32
}

var noCutoff = float32(math.Inf(-1))

func (pk *picker) pick(logits []float32, V int, u float64) pick {
	if pk.greedy {
		best := 0
		for v := 1; v < V; v++ {
			if logits[v] > logits[best] {
				best = v
			}
		}
		return pick{tok: best, kept: 1, cutoff: noCutoff}
	}
	invT := 1 / pk.s.Temperature
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
	p := pk.p[:V]
	var sum float64
	for v, l := range logits[:V] {
		e := 0.0
		if l >= cutLogit {
			e = expNeg(float64(l)*invT - mx)
		}
		p[v] = e
		sum += e
	}
	logZ := mx + math.Log(sum)
	if pk.s.TopK <= 0 && pk.s.TopP >= 1 {
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
		return pick{tok: choice, logp: lp, truncLogp: lp, kept: V, cutoff: noCutoff}
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
	return pick{tok: choice, logp: lp, truncLogp: lp - math.Log(mass/sum), kept: len(kept), cutoff: keptCutoff(logits[:V], kept)}
}

// keptCutoff returns a logit c with {v : logits[v] >= c} = kept (token ids, ascending), or -Inf
// when every token is kept. The kept set of temperature, top-k and top-p (both keeping ties) is
// the tokens at or above its smallest logit lo; c is the midpoint between lo and the largest
// excluded logit hi, so logits recomputed with a rounding difference (a full forward pass
// instead of the KV-cache decoder) below half the gap still select the same set. Where lo and
// hi are adjacent floats the midpoint rounds to one of them and c is lo.
func keptCutoff(logits []float32, kept []int) float32 {
	if len(kept) == len(logits) {
		return noCutoff
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

// truncate returns the kept tokens (top-k with ties at the k-th value, then top-p) in token
// order.
func (pk *picker) truncate(p []float64) []int {
	pk.order = pk.order[:0]
	for v, e := range p {
		if e > 0 {
			pk.order = append(pk.order, v)
		}
	}
	order := pk.order
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	n := len(order)
	m := n
	if k := pk.s.TopK; k > 0 && k < n {
		kth := p[order[k-1]]
		m = k
		for m < n && p[order[m]] == kth {
			m++
		}
	}
	if pk.s.TopP < 1 {
		var z float64
		for _, v := range order[:m] {
			z += p[v]
		}
		var cum float64
		for j, v := range order[:m] {
			cum += p[v] / z
			if cum >= pk.s.TopP {
				// Ties at the cut are kept, as top-k keeps them.
				for m = j + 1; m < len(order) && p[order[m]] == p[v]; m++ {
				}
				break
			}
		}
	}
	pk.kept = append(pk.kept[:0], order[:m]...)
	sort.Ints(pk.kept)
	return pk.kept
}

// decoded are the new tokens of one decoder batch.
type decoded struct {
	tokens              [][]int32
	logp, trunc, cutoff [][]float32
	kept                [][]int32
}

// decode continues B equal-length prompts with d, drawing up to maxNew tokens per row (one
// uniform draw from r per token, rows in order) and stopping a row at eos.
func decode(d *gpt2.Decoder, prompts [][]int32, maxNew, eos int, s Sampling, greedy bool, r *rng.RNG) (*decoded, error) {
	B, P := len(prompts), len(prompts[0])
	if B != d.Rows() {
		return nil, fmt.Errorf("decode: %d prompts for a decoder of %d rows", B, d.Rows())
	}
	flat := make([]int32, 0, B*P)
	for _, p := range prompts {
		flat = append(flat, p...)
	}
	maxNew = min(maxNew, d.Limit()-P)
	d.Reset()
	logits, err := d.Step(flat, P)
	if err != nil {
		return nil, err
	}
	out := &decoded{tokens: make([][]int32, B), logp: make([][]float32, B), trunc: make([][]float32, B), cutoff: make([][]float32, B),
		kept: make([][]int32, B)}
	done := make([]bool, B)
	next := make([]int32, B)
	workers := min(runtime.GOMAXPROCS(0), B)
	pickers := make([]*picker, workers)
	for w := range pickers {
		pickers[w] = &picker{s: s, greedy: greedy}
	}
	us := make([]float64, B)
	picks := make([]pick, B)
	V := d.VocabSize()
	for step := 0; step < maxNew; step++ {
		stride := len(logits) / B
		// Draw the uniforms in row order, then pick the rows in parallel: the same tokens
		// whatever the number of workers.
		for b := range B {
			if !done[b] && !greedy {
				us[b] = r.Float64()
			}
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for b := w; b < B; b += workers {
					if !done[b] {
						picks[b] = pickers[w].pick(logits[b*stride:(b+1)*stride], V, us[b])
					}
				}
			}(w)
		}
		wg.Wait()
		active := 0
		for b := range B {
			if done[b] {
				next[b] = int32(eos)
				continue
			}
			p := picks[b]
			next[b] = int32(p.tok)
			out.tokens[b] = append(out.tokens[b], int32(p.tok))
			out.logp[b] = append(out.logp[b], float32(p.logp))
			out.trunc[b] = append(out.trunc[b], float32(p.truncLogp))
			out.kept[b] = append(out.kept[b], int32(p.kept))
			out.cutoff[b] = append(out.cutoff[b], p.cutoff)
			if p.tok == eos {
				done[b] = true
			} else {
				active++
			}
		}
		if active == 0 || step == maxNew-1 {
			break
		}
		if logits, err = d.Step(next, 1); err != nil {
			return nil, err
		}
	}
	return out, nil
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
