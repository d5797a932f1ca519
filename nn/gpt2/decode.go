package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/internal/halfweights"
	"github.com/vkgrad/vkgrad/nn/internal/kvrows"
	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder runs the model incrementally with a key/value cache over B rows, each at its own
// position: StepRows feeds the next tokens of some rows and returns the logits of each one's
// last token, Fork copies one row's cache into others, and Step feeds all rows at a shared
// position. It reads the model's parameters but owns its buffers, so sampling never disturbs
// training activations.
//
// On a backend that multiplies by bfloat16 weight copies (tensor.HalfWeightMatMuler), in BF16
// product precision, NewDecoder copies the weight matrices a step multiplies and steps of at
// most the backend's HalfWeightRows tokens read the copies: half the bytes, the same bits.
// The copies are those of the weights at NewDecoder or the last Reset, which rounds them again
// at the next step: a decoder kept across a weight update must be Reset, as its cache must.
type Decoder struct {
	m        *Model
	B, limit int // rows and the most positions the cache holds
	rows     *kvrows.Rows

	kcache, vcache []*tensor.Tensor // per layer (B, limit, C)
	caches         []*tensor.Tensor // kcache then vcache, what Fork copies
	tokens         *tensor.Tensor   // int32 (B*limit)
	x, ln, atty    *tensor.Tensor   // (B*limit, C)
	qkv            *tensor.Tensor   // (B*limit, 3C)
	fch            *tensor.Tensor   // (B*limit, 4C)
	mean, rstd     *tensor.Tensor   // (B*limit)
	last, lastLN   *tensor.Tensor   // (B, C)
	logits         *tensor.Tensor   // (B, Vp)
	hostLogits     []float32
	scratch        []*tensor.Tensor
	halves         *halfweights.Set // bfloat16 weight copies; nil without
}

// NewDecoder allocates a decoder for B rows of up to limit positions (at most max_seq_len).
func (m *Model) NewDecoder(B, limit int) (*Decoder, error) {
	cfg := m.Config
	if B <= 0 {
		return nil, fmt.Errorf("gpt2: decoder batch size %d must be positive", B)
	}
	if limit <= 0 || limit > cfg.MaxSeqLen {
		return nil, fmt.Errorf("gpt2: decoder length %d must be in [1, max_seq_len=%d]", limit, cfg.MaxSeqLen)
	}
	if err := tensor.CheckFits(m.Backend, cfg.DecoderBytes(B, limit)+m.DecoderCopyBytes(), fmt.Sprintf("gpt2: a decoder of %d rows of %d positions (its key/value cache, activations and bfloat16 weight copies)", B, limit)); err != nil {
		return nil, err
	}
	d := &Decoder{m: m, B: B, limit: limit, rows: kvrows.New(B, limit)}
	C, N := cfg.Channels, B*limit
	var err error
	alloc := func(dtype tensor.DType, shape ...int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		var t *tensor.Tensor
		t, err = tensor.New(m.Backend, dtype, shape...)
		if t != nil {
			d.scratch = append(d.scratch, t)
		}
		return t
	}
	for l := 0; l < cfg.NumLayers; l++ {
		d.kcache = append(d.kcache, alloc(tensor.Float32, B, limit, C))
		d.vcache = append(d.vcache, alloc(tensor.Float32, B, limit, C))
	}
	d.tokens = alloc(tensor.Int32, N)
	d.x, d.ln, d.atty = alloc(tensor.Float32, N, C), alloc(tensor.Float32, N, C), alloc(tensor.Float32, N, C)
	d.qkv = alloc(tensor.Float32, N, 3*C)
	d.fch = alloc(tensor.Float32, N, 4*C)
	d.mean, d.rstd = alloc(tensor.Float32, N), alloc(tensor.Float32, N)
	d.last, d.lastLN = alloc(tensor.Float32, B, C), alloc(tensor.Float32, B, C)
	d.logits = alloc(tensor.Float32, B, cfg.PaddedVocabSize)
	if err == nil {
		d.halves, err = halfweights.New(m.Backend, m.decoderWeights())
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gpt2: allocating decoder for B=%d length %d: %w", B, limit, err)
	}
	d.hostLogits = make([]float32, B*cfg.PaddedVocabSize)
	d.caches = append(append(d.caches, d.kcache...), d.vcache...)
	return d, nil
}

// decoderWeights lists the weight matrices a decoding step multiplies by, as (N, K) with
// op(B) = Wᵀ: each layer's four and the lm head (the token embedding).
func (m *Model) decoderWeights() []halfweights.Matrix {
	C := m.Config.Channels
	var ws []halfweights.Matrix
	for l := range m.layers {
		lp := &m.layers[l]
		ws = append(ws, halfweights.Matrix{W: lp.qkvw.Value, N: 3 * C, K: C}, halfweights.Matrix{W: lp.attprojw.Value, N: C, K: C},
			halfweights.Matrix{W: lp.fcw.Value, N: 4 * C, K: C}, halfweights.Matrix{W: lp.fcprojw.Value, N: C, K: 4 * C})
	}
	return append(ws, halfweights.Matrix{W: m.wte.Value, N: m.Config.PaddedVocabSize, K: C})
}

// DecoderCopyBytes is the memory of the bfloat16 weight copies NewDecoder makes: two bytes per
// weight a step multiplies on a backend that offers copies in its product precision
// (tensor.HalfWeightsFor), else 0.
func (m *Model) DecoderCopyBytes() int64 { return halfweights.CopyBytes(m.Backend, m.decoderWeights()) }

// WeightCopyBytes is the memory of the decoder's bfloat16 weight copies (0 without).
func (d *Decoder) WeightCopyBytes() int64 { return d.halves.Bytes() }

// Close frees the decoder's buffers and weight copies.
func (d *Decoder) Close() {
	for _, t := range d.scratch {
		d.m.Backend.Free(t.Storage)
	}
	d.scratch = nil
	d.halves.Free()
	d.halves = nil
}

// Reset starts every row again at position 0 and has the next step copy the weights again
// (where the decoder keeps bfloat16 copies), so a decoder reused after a weight update reads
// the new weights.
func (d *Decoder) Reset() {
	d.rows.ResetAll()
	d.halves.MarkStale()
}

// Pos is the number of positions fed so far when all rows share it (as Step keeps them), and
// -1 when they differ; RowPos gives each row's.
func (d *Decoder) Pos() int {
	if pos, ok := d.rows.Shared(); ok {
		return pos
	}
	return -1
}

// RowPos is the number of positions fed to row so far. It panics on a row outside [0, Rows()).
func (d *Decoder) RowPos(row int) int { return d.rows.Pos(row) }

// ResetRow starts row again at position 0, leaving the others as they are.
func (d *Decoder) ResetRow(row int) error {
	if err := d.rows.Reset(row); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}

// Fork copies row src's cache into each dst row and sets them at src's position, so rows that
// share a prefix (a group's prompt) prefill it once; each then goes on with StepRows.
func (d *Decoder) Fork(src int, dst []int) error {
	if err := d.rows.Fork(d.m.Backend, d.caches, d.m.Config.Channels, src, dst); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}

// ForkPrefix copies the first n positions of row src's cache (n at most its position) into
// each dst row and sets them at n: rows join a group's prompt after the row that prefilled it
// has gone on decoding.
func (d *Decoder) ForkPrefix(src, n int, dst []int) error {
	if err := d.rows.ForkPrefix(d.m.Backend, d.caches, d.m.Config.Channels, src, n, dst); err != nil {
		return fmt.Errorf("gpt2: %w", err)
	}
	return nil
}

// Step feeds Tq tokens per row (tokens is B*Tq, row-major) at the next positions, which all rows
// must share, and returns the logits of each row's last new position, (B, Vp) on the host; the
// slice is reused by the next step. Only the first V columns are meaningful.
func (d *Decoder) Step(tokens []int32, Tq int) ([]float32, error) {
	all, err := d.rows.All(tokens, Tq)
	if err != nil {
		return nil, fmt.Errorf("gpt2: %w", err)
	}
	return d.StepRows(all, tokens, Tq)
}

// StepRows feeds Tq tokens to each listed row (tokens is len(rows)*Tq, in the order of rows),
// each at its own next position, and returns the logits of each listed row's last new
// position, (len(rows), Vp) on the host, reused by the next step. Rows not listed keep their
// cache and position.
func (d *Decoder) StepRows(rows []int, tokens []int32, Tq int) ([]float32, error) {
	return d.step(rows, d.rows.Even(len(rows), Tq), tokens)
}

// StepRagged is StepRows with a token list of its own length per row: tokens[i] goes to rows[i].
// Rows decoding one sampled token and rows taking a longer turn (a tool's reply) share a step.
func (d *Decoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	lens, flat, err := d.rows.Ragged(rows, tokens)
	if err != nil {
		return nil, fmt.Errorf("gpt2: %w", err)
	}
	return d.step(rows, lens, flat)
}

// step runs the model over the gathered tokens of the listed rows. Everything but the position
// embedding and the attention works per token, over all rows' tokens at once; those two run
// once per run of consecutive rows at one position (one call for a Step, or for the rows of
// one forked group), so rows scattered over positions cost an attention dispatch each per
// layer (a kernel taking a position per row would make it one).
func (d *Decoder) step(rows, lens []int, tokens []int32) ([]float32, error) {
	cfg := d.m.Config
	C, NH, Vp := cfg.Channels, cfg.NumHeads, cfg.PaddedVocabSize
	p, err := d.rows.Plan(rows, lens, tokens, cfg.VocabSize)
	if err != nil {
		return nil, fmt.Errorf("gpt2: %w", err)
	}
	if err := d.halves.Refresh(); err != nil {
		return nil, fmt.Errorf("gpt2: %w", err)
	}
	be := d.m.Backend
	N, R := p.Tokens, len(rows)
	tok := d.tokens.View(0, N)
	if err := be.UploadInt32(tok, tokens); err != nil {
		return nil, err
	}
	x, ln, atty := d.x.View(0, N, C), d.ln.View(0, N, C), d.atty.View(0, N, C)
	qkv, fch := d.qkv.View(0, N, 3*C), d.fch.View(0, N, 4*C)
	mean, rstd := d.mean.View(0, N), d.rstd.View(0, N)
	for _, r := range p.Runs {
		n := r.Count * r.N
		wpe := d.m.wpe.Value.View(r.Pos*C, r.N, C)
		be.EncoderForward(x.View(r.Off*C, n, C), tok.View(r.Off, n), d.m.wte.Value, wpe, r.Count, r.N, C)
	}
	first := &d.m.layers[0]
	be.LayerNormForward(ln, mean, rstd, x, first.ln1w.Value, first.ln1b.Value, N, C)
	for l := range d.m.layers {
		lp := &d.m.layers[l]
		d.halves.MatMul(be, qkv, ln, lp.qkvw.Value, lp.qkvb.Value, tensor.MatMulParams{M: N, N: 3 * C, K: C, TransB: true})
		for _, r := range p.Runs {
			n, cache := r.Count*r.N, r.Row*d.limit*C
			kc, vc := d.kcache[l].View(cache, r.Count, d.limit, C), d.vcache[l].View(cache, r.Count, d.limit, C)
			be.AttentionDecode(atty.View(r.Off*C, n, C), kc, vc, qkv.View(r.Off*3*C, n, 3*C), r.Count, r.N, r.Pos, d.limit, C, NH)
		}
		// x += atty @ attprojw^T + b, accumulated in place: first the bias-free product into ln.
		d.halves.MatMul(be, ln, atty, lp.attprojw.Value, lp.attprojb.Value, tensor.MatMulParams{M: N, N: C, K: C, TransB: true})
		be.ResidualLayerNormForward(x, ln, mean, rstd, x, ln, lp.ln2w.Value, lp.ln2b.Value, N, C)
		// GELU in place: the decoder keeps no pre-activation.
		d.halves.MatMul(be, fch, ln, lp.fcw.Value, lp.fcb.Value, tensor.MatMulParams{M: N, N: 4 * C, K: C, TransB: true, GeluOut: fch})
		d.halves.MatMul(be, ln, fch, lp.fcprojw.Value, lp.fcprojb.Value, tensor.MatMulParams{M: N, N: C, K: 4 * C, TransB: true})
		if l+1 < len(d.m.layers) { // with the next layer's ln1, as the training forward does
			next := &d.m.layers[l+1]
			be.ResidualLayerNormForward(x, ln, mean, rstd, x, ln, next.ln1w.Value, next.ln1b.Value, N, C)
		} else {
			be.Add(x, x, ln)
		}
	}
	last, lastLN, logits := d.last.View(0, R, C), d.lastLN.View(0, R, C), d.logits.View(0, R, Vp)
	for i, s := range p.Spans {
		be.Copy(last.View(i*C, C), x.View((s.Off+s.N-1)*C, C))
	}
	be.LayerNormForward(lastLN, mean.View(0, R), rstd.View(0, R), last, d.m.lnfw.Value, d.m.lnfb.Value, R, C)
	d.halves.MatMul(be, logits, lastLN, d.m.wte.Value, nil, tensor.MatMulParams{M: R, N: Vp, K: C, TransB: true})
	host := d.hostLogits[:R*Vp]
	if err := be.Download(host, logits); err != nil {
		return nil, err
	}
	d.rows.Advance(p)
	return host, nil
}

// Limit is the number of positions the decoder holds.
func (d *Decoder) Limit() int { return d.limit }

// Rows is the decoder's batch size.
func (d *Decoder) Rows() int { return d.B }

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab): logits
// beyond it are padding.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }
