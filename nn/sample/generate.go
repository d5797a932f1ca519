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
	greedy := opt.Temperature == 0
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
	res := &Result{Tokens: make([][]int32, B), LogProbs: make([][]float32, B), Trunc: make([][]float32, B),
		Kept: make([][]int32, B), Cutoff: make([][]float32, B), Finished: make([]bool, B)}
	logits, err := d.Step(flat, P)
	if err != nil {
		return nil, err
	}
	workers := min(runtime.GOMAXPROCS(0), B)
	pickers := make([]*Picker, workers)
	for w := range pickers {
		pickers[w] = &Picker{opt: opt}
	}
	us := make([]float64, B)
	picks := make([]Pick, B)
	next := make([]int32, B)
	V := d.VocabSize()
	for step := 0; step < maxNew; step++ {
		stride := len(logits) / B
		for b := range B {
			if !res.Finished[b] {
				if err := CheckLogits(logits[b*stride:(b+1)*stride], V); err != nil {
					return nil, fmt.Errorf("sample: row %d, new token %d: %w", b, step+1, err)
				}
			}
		}
		// Draw the uniforms in row order, then pick the rows in parallel: the same tokens
		// whatever the number of workers.
		for b := range B {
			if !res.Finished[b] && !greedy {
				us[b] = r.Float64()
			}
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for b := w; b < B; b += workers {
					if !res.Finished[b] {
						picks[b] = pickers[w].Pick(logits[b*stride:(b+1)*stride], V, us[b])
					}
				}
			})
		}
		wg.Wait()
		active := 0
		for b := range B {
			if res.Finished[b] {
				next[b] = max(eos, 0)
				continue
			}
			pk := picks[b]
			next[b] = pk.Token
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
		if active == 0 || step == maxNew-1 {
			break
		}
		if logits, err = d.Step(next, 1); err != nil {
			return nil, err
		}
	}
	return res, nil
}
