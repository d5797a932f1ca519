package sample

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/vkgrad/vkgrad/internal/rng"
)

// Decoder is an incremental model with a key/value cache (gpt2.Decoder, llama.Decoder): Step
// feeds the next Tq tokens of each row and returns each row's last logits, row after row.
type Decoder interface {
	Step(tokens []int32, Tq int) ([]float32, error)
	Reset()
	Limit() int     // positions the cache holds
	Rows() int      // batch size
	VocabSize() int // meaningful logits per row (rows may be padded beyond)
}

// Result holds the completions of one Generate call.
type Result struct {
	Tokens   [][]int32   // new tokens per row, up to and including EOS when it was drawn
	LogProbs [][]float32 // Pick.LogProb of each new token
	Trunc    [][]float32 // Pick.TruncLogProb of each new token
	Kept     [][]int32   // Pick.Kept of each new token
	Cutoff   [][]float32 // Pick.Cutoff of each new token
	Finished []bool      // the row drew EOS
}

// Generate continues B prompts of equal length with d (which must have been made for B rows),
// drawing up to maxNew tokens per row, stopping a row at eos (when eos >= 0) and all rows when
// every row has stopped or the decoder is full. Each step takes one uniform from r per
// unfinished row, in row order, and then picks the rows in parallel, so a seed fixes the
// tokens whatever the number of CPUs. r may be nil when greedy.
func Generate(d Decoder, prompts [][]int32, maxNew int, eos int32, opt Options, r *rng.RNG) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	flat, err := flattenPrompts(prompts, d)
	if err != nil {
		return nil, err
	}
	P := len(prompts[0])
	maxNew = min(maxNew, d.Limit()-P)
	d.Reset()
	g := newGeneration(len(prompts), d.VocabSize(), opt, r)
	logits, err := d.Step(flat, P)
	if err != nil {
		return nil, err
	}
	for step := 0; step < maxNew; step++ {
		if err := g.checkLogits(logits, step); err != nil {
			return nil, err
		}
		g.drawUniforms()
		g.pickRows(logits)
		active := g.appendPicks(eos)
		if active == 0 || step == maxNew-1 {
			break
		}
		if logits, err = d.Step(g.next, 1); err != nil {
			return nil, err
		}
	}
	return g.res, nil
}

// flattenPrompts checks the prompts are one per decoder row, of equal nonzero length and
// leave room for a new token, and returns them row after row.
func flattenPrompts(prompts [][]int32, d Decoder) ([]int32, error) {
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
	return flat, nil
}

// generation is the state of one Generate call: the result so far and the per-step buffers.
type generation struct {
	res     *Result
	B, V    int
	greedy  bool
	r       *rng.RNG
	pickers []*Picker // one per worker
	us      []float64 // this step's uniform per row
	picks   []Pick
	next    []int32 // the tokens fed at the next step
}

func newGeneration(B, V int, opt Options, r *rng.RNG) *generation {
	g := &generation{
		res: &Result{Tokens: make([][]int32, B), LogProbs: make([][]float32, B), Trunc: make([][]float32, B),
			Kept: make([][]int32, B), Cutoff: make([][]float32, B), Finished: make([]bool, B)},
		B: B, V: V, greedy: opt.Temperature == 0, r: r,
		pickers: make([]*Picker, min(runtime.GOMAXPROCS(0), B)),
		us:      make([]float64, B), picks: make([]Pick, B), next: make([]int32, B),
	}
	for w := range g.pickers {
		g.pickers[w] = &Picker{opt: opt}
	}
	return g
}

// row returns row b's logits.
func (g *generation) row(logits []float32, b int) []float32 {
	stride := len(logits) / g.B
	return logits[b*stride : (b+1)*stride]
}

// checkLogits refuses non-finite logits in an unfinished row before new token step+1.
func (g *generation) checkLogits(logits []float32, step int) error {
	for b := range g.B {
		if !g.res.Finished[b] {
			if err := CheckLogits(g.row(logits, b), g.V); err != nil {
				return fmt.Errorf("sample: row %d, new token %d: %w", b, step+1, err)
			}
		}
	}
	return nil
}

// drawUniforms takes one uniform per unfinished row in row order, before the rows are picked
// in parallel, so the tokens do not depend on the number of workers.
func (g *generation) drawUniforms() {
	for b := range g.B {
		if !g.res.Finished[b] && !g.greedy {
			g.us[b] = g.r.Float64()
		}
	}
}

// pickRows picks every unfinished row's token, the rows shared among the workers.
func (g *generation) pickRows(logits []float32) {
	workers := len(g.pickers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for b := w; b < g.B; b += workers {
				if !g.res.Finished[b] {
					g.picks[b] = g.pickers[w].Pick(g.row(logits, b), g.V, g.us[b])
				}
			}
		})
	}
	wg.Wait()
}

// appendPicks records each unfinished row's pick, marks the rows that drew eos finished, sets
// the tokens to feed next (eos, or 0, for finished rows) and returns the rows still active.
func (g *generation) appendPicks(eos int32) int {
	res := g.res
	active := 0
	for b := range g.B {
		if res.Finished[b] {
			g.next[b] = max(eos, 0)
			continue
		}
		pk := g.picks[b]
		g.next[b] = pk.Token
		res.Tokens[b] = append(res.Tokens[b], pk.Token)
		res.LogProbs[b] = append(res.LogProbs[b], float32(pk.LogProb))
		res.Trunc[b] = append(res.Trunc[b], float32(pk.TruncLogProb))
		res.Kept[b] = append(res.Kept[b], int32(pk.Kept))
		res.Cutoff[b] = append(res.Cutoff[b], pk.Cutoff)
		if eos >= 0 && pk.Token == eos {
			res.Finished[b] = true
		} else {
			active++
		}
	}
	return active
}
