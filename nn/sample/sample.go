// Package sample draws tokens from GPT-2 logits (temperature, top-k, top-p, seeded) and generates
// continuations with the model's key/value-cache decoder.
package sample

import (
	"fmt"
	"math"
	"sort"

	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
)

// Options control how a token is drawn.
type Options struct {
	// Temperature divides the logits; 0 means greedy (argmax).
	Temperature float32 `json:"temperature"`
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK int `json:"top_k"`
	// TopP keeps the smallest most-likely prefix whose probability mass reaches TopP; 1 keeps all.
	TopP float32 `json:"top_p"`
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case !(o.Temperature >= 0) || math.IsInf(float64(o.Temperature), 0):
		return fmt.Errorf("temperature %v must be a finite number >= 0", o.Temperature)
	case o.TopK < 0:
		return fmt.Errorf("top-k %d must be >= 0", o.TopK)
	case !(o.TopP > 0 && o.TopP <= 1):
		return fmt.Errorf("top-p %v must be in (0, 1]", o.TopP)
	}
	return nil
}

// Pick is the outcome of one draw.
type Pick struct {
	Token int32
	// LogProb is the token's log-probability under softmax(logits/T) over the whole vocabulary
	// (T = 1 for greedy), the quantity a policy-gradient loss uses.
	LogProb float32
	// TruncLogProb is its log-probability under the distribution actually sampled from
	// (renormalised over the kept set).
	TruncLogProb float32
	// Kept is the size of the kept set.
	Kept int
}

// Picker draws tokens; it keeps scratch space so repeated draws do not allocate.
type Picker struct {
	opt   Options
	probs []float64
	order []int
}

// NewPicker validates the options.
func NewPicker(opt Options) (*Picker, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Picker{opt: opt}, nil
}

// Pick draws one token from the first V logits.
func (p *Picker) Pick(logits []float32, V int, r *rng.RNG) Pick {
	T := float64(p.opt.Temperature)
	greedy := T == 0
	if greedy {
		T = 1
	}
	if cap(p.probs) < V {
		p.probs = make([]float64, V)
		p.order = make([]int, V)
	}
	probs := p.probs[:V]
	maxv := math.Inf(-1)
	best := 0
	for i := 0; i < V; i++ {
		z := float64(logits[i]) / T
		probs[i] = z
		if z > maxv {
			maxv, best = z, i
		}
	}
	var sum float64
	for i := range probs {
		probs[i] = math.Exp(probs[i] - maxv)
		sum += probs[i]
	}
	logZ := maxv + math.Log(sum)
	lp := func(i int) float64 { return float64(logits[i])/T - logZ }
	if greedy {
		return Pick{Token: int32(best), LogProb: float32(lp(best)), TruncLogProb: 0, Kept: 1}
	}
	for i := range probs {
		probs[i] /= sum
	}
	kept := p.keep(probs)
	var keptMass float64
	for _, i := range kept {
		keptMass += probs[i]
	}
	u := r.Float64() * keptMass
	choice := kept[len(kept)-1]
	var acc float64
	for _, i := range kept {
		acc += probs[i]
		if u < acc {
			choice = i
			break
		}
	}
	return Pick{Token: int32(choice), LogProb: float32(lp(choice)), TruncLogProb: float32(lp(choice) - math.Log(keptMass)), Kept: len(kept)}
}

// keep returns the indices of the kept set: top-k first, then the top-p prefix, in descending
// probability order (ties by lower index). Without truncation it is every index in order.
func (p *Picker) keep(probs []float64) []int {
	order := p.order[:len(probs)]
	for i := range order {
		order[i] = i
	}
	if p.opt.TopK <= 0 && p.opt.TopP >= 1 {
		return order
	}
	sort.Slice(order, func(a, b int) bool {
		pa, pb := probs[order[a]], probs[order[b]]
		return pa > pb || (pa == pb && order[a] < order[b])
	})
	n := len(order)
	if p.opt.TopK > 0 && p.opt.TopK < n {
		n = p.opt.TopK
	}
	if p.opt.TopP < 1 {
		var mass float64
		for _, i := range order[:n] {
			mass += probs[i]
		}
		var acc float64
		for j, i := range order[:n] {
			acc += probs[i] / mass
			if acc >= float64(p.opt.TopP) {
				n = j + 1
				break
			}
		}
	}
	return order[:n]
}

// Result holds the completions of one Generate call.
type Result struct {
	Tokens   [][]int32   // new tokens per row, up to and including EOS when it was drawn
	LogProbs [][]float32 // Pick.LogProb of each new token
	Trunc    [][]float32 // Pick.TruncLogProb of each new token
	Kept     [][]int32   // kept-set size at each new token
	Finished []bool      // the row drew EOS
}

// Generate continues B prompts of equal length with d (which must have been made for B rows),
// drawing up to maxNew tokens per row, stopping a row at eos (when eos >= 0) and all rows when
// every row has stopped or the decoder is full.
func Generate(d *gpt2.Decoder, prompts [][]int32, maxNew int, eos int32, opt Options, r *rng.RNG) (*Result, error) {
	picker, err := NewPicker(opt)
	if err != nil {
		return nil, err
	}
	B := len(prompts)
	if B != d.Rows() {
		return nil, fmt.Errorf("sample: %d prompts for a decoder of %d rows", B, d.Rows())
	}
	P := len(prompts[0])
	if P == 0 {
		return nil, fmt.Errorf("sample: empty prompt")
	}
	flat := make([]int32, 0, B*P)
	for i, p := range prompts {
		if len(p) != P {
			return nil, fmt.Errorf("sample: prompt %d has %d tokens, prompt 0 has %d; batch rows must have equal length", i, len(p), P)
		}
		flat = append(flat, p...)
	}
	if P >= d.Limit() {
		return nil, fmt.Errorf("sample: prompt of %d tokens leaves no room in a context of %d", P, d.Limit())
	}
	maxNew = min(maxNew, d.Limit()-P)
	d.Reset()
	res := &Result{Tokens: make([][]int32, B), LogProbs: make([][]float32, B), Trunc: make([][]float32, B), Kept: make([][]int32, B), Finished: make([]bool, B)}
	V := d.VocabSize()
	logits, err := d.Step(flat, P)
	if err != nil {
		return nil, err
	}
	next := make([]int32, B)
	for step := 0; step < maxNew; step++ {
		stride := len(logits) / B
		active := 0
		for b := 0; b < B; b++ {
			if res.Finished[b] {
				next[b] = max(eos, 0)
				continue
			}
			pk := picker.Pick(logits[b*stride:b*stride+stride], V, r)
			next[b] = pk.Token
			res.Tokens[b] = append(res.Tokens[b], pk.Token)
			res.LogProbs[b] = append(res.LogProbs[b], pk.LogProb)
			res.Trunc[b] = append(res.Trunc[b], pk.TruncLogProb)
			res.Kept[b] = append(res.Kept[b], int32(pk.Kept))
			if eos >= 0 && pk.Token == eos {
				res.Finished[b] = true
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
	return res, nil
}

// Score returns the log-probability of token under softmax(logits[:V]/T) and under the truncated
// distribution Pick samples from; inKept is false (and truncLogp -Inf) when truncation drops it.
func (p *Picker) Score(logits []float32, V int, token int32) (logp, truncLogp float64, inKept bool) {
	T := float64(p.opt.Temperature)
	if T == 0 {
		T = 1
	}
	if cap(p.probs) < V {
		p.probs = make([]float64, V)
		p.order = make([]int, V)
	}
	probs := p.probs[:V]
	maxv := math.Inf(-1)
	for i := 0; i < V; i++ {
		probs[i] = float64(logits[i]) / T
		maxv = math.Max(maxv, probs[i])
	}
	var sum float64
	for i := range probs {
		probs[i] = math.Exp(probs[i] - maxv)
		sum += probs[i]
	}
	logp = float64(logits[token])/T - maxv - math.Log(sum)
	for i := range probs {
		probs[i] /= sum
	}
	var keptMass float64
	for _, i := range p.keep(probs) {
		keptMass += probs[i]
		if i == int(token) {
			inKept = true
		}
	}
	if !inKept {
		return logp, math.Inf(-1), false
	}
	return logp, logp - math.Log(keptMass), true
}
