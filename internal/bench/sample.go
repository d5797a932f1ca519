package bench

import (
	"time"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/tensor"
)

// SamplePrompt is the prompt, in tokens, that [Sample] decodes after: a shape's context must
// hold it and the new tokens.
const SamplePrompt = 16

// SampleOptions are a decoding benchmark's settings.
type SampleOptions struct {
	Batches []int // batch sizes, each timed in turn; every one at least 1
	Tokens  int   // tokens generated per row
	Reps    int   // generations per batch size, the fastest kept
}

// Sample times KV-cache decoding of s for each of o.Batches after a [SamplePrompt]-token
// prompt: each new token reads every weight once, so a narrow batch is bounded by memory
// bandwidth, measured here with a streaming read, and a wide one by the FMA peak. The prompt
// and o.Tokens must fit s's context.
func Sample(be tensor.Backend, s Shape, o SampleOptions) (map[string]any, error) {
	if s.IsLlama {
		m, err := newRandomLlama(be, s.Llama, s.LoRARank)
		if err != nil {
			return nil, err
		}
		open := func(B, limit int) (decoder, error) { return m.NewDecoder(B, limit) }
		return timeDecoding(be, open, s.Llama.Vocab, llamaCost(s.Llama), m.DecoderCopyBytes(), o)
	}
	m, err := newRandomGPT2(be, s.GPT2)
	if err != nil {
		return nil, err
	}
	open := func(B, limit int) (decoder, error) { return m.NewDecoder(B, limit) }
	return timeDecoding(be, open, s.GPT2.VocabSize, gpt2Cost(s.GPT2), m.DecoderCopyBytes(), o)
}

// decoder is a KV-cache decoder of either model family.
type decoder interface {
	Step(tokens []int32, Tq int) ([]float32, error)
	Reset()
	Close()
}

// timeDecoding measures decoding steps per second for each batch size after the prompt, and
// reads them against both limits of decoding: the weight bytes read per second against the
// machine's read bandwidth (every weight is read once per step), which bounds a narrow batch,
// and the work per second against the FMA peak, which bounds a wide one.
//
// A decoder holding bfloat16 weight copies (copyBytes of them) reads those instead of the
// float32 weights in steps of at most the backend's HalfWeightRows rows: copyBytes fewer bytes.
func timeDecoding(be tensor.Backend, open func(B, limit int) (decoder, error), vocab int, cost modelCost, copyBytes int64, o SampleOptions) (map[string]any, error) {
	const prompt = SamplePrompt
	newTokens := o.Tokens
	weightBytes := cost.weightBytes
	// A timed step's work per row, averaged over the steps: each feeds the token at position
	// prompt+t and attends that many positions.
	var rowFLOPs float64
	for t := 1; t < newTokens; t++ {
		rowFLOPs += cost.tokenFLOPs(prompt+t) + 2*cost.head
	}
	rowFLOPs /= float64(max(1, newTokens-1))
	peakBefore, _ := peak(be)
	bw := readBandwidth(be)
	var rows []map[string]any
	for _, B := range o.Batches {
		d, err := open(B, prompt+newTokens)
		if err != nil {
			return nil, err
		}
		prompts := make([][]int32, B)
		for i := range prompts {
			prompts[i] = make([]int32, prompt)
			for j := range prompts[i] {
				prompts[i][j] = int32((i*31 + j*7) % vocab)
			}
		}
		best := 0.0
		for r := 0; r < o.Reps; r++ {
			if _, err := d.Step(flatten(prompts), prompt); err != nil {
				return nil, err
			}
			start := time.Now()
			next := make([]int32, B)
			for t := 0; t < newTokens-1; t++ {
				if _, err := d.Step(next, 1); err != nil {
					return nil, err
				}
			}
			stepsPerS := float64(newTokens-1) / time.Since(start).Seconds()
			best = max(best, stepsPerS)
			d.Reset()
		}
		d.Close()
		read := weightBytes
		if h, ok := tensor.HalfWeightsFor(be); ok && B <= h.HalfWeightRows() {
			read -= float64(copyBytes)
		}
		row := map[string]any{"batch": B, "tokens_per_s": best * float64(B), "steps_per_s": best,
			"weight_gb_per_s": best * read / 1e9, "bandwidth_fraction": best * read / bw,
			"gflops": best * float64(B) * rowFLOPs / 1e9}
		rows = append(rows, row)
	}
	rep := map[string]any{"bench": "sample", "rows": rows, "read_bandwidth_gb_per_s": bw / 1e9,
		"weight_bytes": weightBytes, "weight_copy_bytes": copyBytes, "peak_rss_bytes": sysinfo.PeakRSS()}
	// Measured before and after the decoding, the higher kept, as Train does.
	if p, th := peak(be); max(p, peakBefore) > 0 {
		p = max(p, peakBefore)
		setPeak(rep, be, p, th)
		for _, row := range rows {
			row["peak_fraction"] = row["gflops"].(float64) / p
		}
	}
	return rep, nil
}

func flatten(rows [][]int32) []int32 {
	var out []int32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}
