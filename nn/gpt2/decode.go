package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder runs the model incrementally with a key/value cache: each Step feeds the next tokens of
// B rows that share their position and returns the logits of each row's last token. It reads the
// model's parameters but owns its buffers, so sampling never disturbs training activations.
type Decoder struct {
	m        *Model
	B, limit int // rows and the most positions the cache holds
	pos      int

	kcache, vcache []*tensor.Tensor // per layer (B, limit, C)
	tokens         *tensor.Tensor   // int32 (B*limit)
	x, ln, atty    *tensor.Tensor   // (B*limit, C)
	qkv            *tensor.Tensor   // (B*limit, 3C)
	fch            *tensor.Tensor   // (B*limit, 4C)
	mean, rstd     *tensor.Tensor   // (B*limit)
	last, lastLN   *tensor.Tensor   // (B, C)
	logits         *tensor.Tensor   // (B, Vp)
	hostLogits     []float32
	scratch        []*tensor.Tensor
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
	if err := tensor.CheckFits(m.Backend, cfg.DecoderBytes(B, limit), fmt.Sprintf("gpt2: a decoder of %d rows of %d positions (its key/value cache and activations)", B, limit)); err != nil {
		return nil, err
	}
	d := &Decoder{m: m, B: B, limit: limit}
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
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("gpt2: allocating decoder for B=%d length %d: %w", B, limit, err)
	}
	d.hostLogits = make([]float32, B*cfg.PaddedVocabSize)
	return d, nil
}

// Close frees the decoder's buffers.
func (d *Decoder) Close() {
	for _, t := range d.scratch {
		d.m.Backend.Free(t.Storage)
	}
	d.scratch = nil
}

// Reset starts a new sequence.
func (d *Decoder) Reset() { d.pos = 0 }

// Pos is the number of positions fed so far.
func (d *Decoder) Pos() int { return d.pos }

// Step feeds Tq tokens per row (tokens is B*Tq, row-major) at the next positions and returns the
// logits of each row's last new position, (B, Vp) on the host; the slice is reused by the next
// Step. Only the first V columns are meaningful.
func (d *Decoder) Step(tokens []int32, Tq int) ([]float32, error) {
	cfg := d.m.Config
	B, C, NH, Vp := d.B, cfg.Channels, cfg.NumHeads, cfg.PaddedVocabSize
	if Tq <= 0 || len(tokens) != B*Tq {
		return nil, fmt.Errorf("gpt2: decoder step got %d tokens for %d rows of %d", len(tokens), B, Tq)
	}
	if d.pos+Tq > d.limit {
		return nil, fmt.Errorf("gpt2: decoder holds %d positions; %d + %d would exceed it", d.limit, d.pos, Tq)
	}
	if err := d.m.checkTokens("decoder tokens", tokens, B, Tq); err != nil {
		return nil, err
	}
	be := d.m.Backend
	N := B * Tq
	tok := d.tokens.View(0, N)
	if err := be.UploadInt32(tok, tokens); err != nil {
		return nil, err
	}
	x, ln, atty := d.x.View(0, N, C), d.ln.View(0, N, C), d.atty.View(0, N, C)
	qkv, fch := d.qkv.View(0, N, 3*C), d.fch.View(0, N, 4*C)
	mean, rstd := d.mean.View(0, N), d.rstd.View(0, N)
	wpe := d.m.wpe.Value.View(d.pos*C, Tq, C)
	be.EncoderForward(x, tok, d.m.wte.Value, wpe, B, Tq, C)
	first := &d.m.layers[0]
	be.LayerNormForward(ln, mean, rstd, x, first.ln1w.Value, first.ln1b.Value, N, C)
	for l := range d.m.layers {
		lp := &d.m.layers[l]
		be.MatMul(qkv, ln, lp.qkvw.Value, lp.qkvb.Value, tensor.MatMulParams{M: N, N: 3 * C, K: C, TransB: true})
		be.AttentionDecode(atty, d.kcache[l], d.vcache[l], qkv, B, Tq, d.pos, d.limit, C, NH)
		// x += atty @ attprojw^T + b, accumulated in place: first the bias-free product into ln.
		be.MatMul(ln, atty, lp.attprojw.Value, lp.attprojb.Value, tensor.MatMulParams{M: N, N: C, K: C, TransB: true})
		be.ResidualLayerNormForward(x, ln, mean, rstd, x, ln, lp.ln2w.Value, lp.ln2b.Value, N, C)
		// GELU in place: the decoder keeps no pre-activation.
		be.MatMul(fch, ln, lp.fcw.Value, lp.fcb.Value, tensor.MatMulParams{M: N, N: 4 * C, K: C, TransB: true, GeluOut: fch})
		be.MatMul(ln, fch, lp.fcprojw.Value, lp.fcprojb.Value, tensor.MatMulParams{M: N, N: C, K: 4 * C, TransB: true})
		if l+1 < len(d.m.layers) { // with the next layer's ln1, as the training forward does
			next := &d.m.layers[l+1]
			be.ResidualLayerNormForward(x, ln, mean, rstd, x, ln, next.ln1w.Value, next.ln1b.Value, N, C)
		} else {
			be.Add(x, x, ln)
		}
	}
	for b := 0; b < B; b++ {
		be.Copy(d.last.View(b*C, C), x.View((b*Tq+Tq-1)*C, C))
	}
	be.LayerNormForward(d.lastLN, mean.View(0, B), rstd.View(0, B), d.last, d.m.lnfw.Value, d.m.lnfb.Value, B, C)
	be.MatMul(d.logits, d.lastLN, d.m.wte.Value, nil, tensor.MatMulParams{M: B, N: Vp, K: C, TransB: true})
	if err := be.Download(d.hostLogits, d.logits); err != nil {
		return nil, err
	}
	d.pos += Tq
	return d.hostLogits, nil
}

// Limit is the number of positions the decoder holds.
func (d *Decoder) Limit() int { return d.limit }

// Rows is the decoder's batch size.
func (d *Decoder) Rows() int { return d.B }

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab): logits
// beyond it are padding.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }
