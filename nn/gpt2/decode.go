package gpt2

import (
	"fmt"
	"slices"

	"github.com/vkgrad/vkgrad/nn/internal/halfweights"
	"github.com/vkgrad/vkgrad/nn/internal/kvrows"
	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder runs the model incrementally with a key/value cache over B rows, each at its own
// position: StepRows feeds the next tokens of some rows and returns the logits of each one's
// last token, Fork copies one row's cache into others, and Step feeds all rows at a shared
// position. It reads the model's parameters but owns its buffers, so sampling never disturbs
// training activations.
// These steps are the embedded kvrows.Decoder's, which plans each and runs forward below.
//
// On a backend that multiplies by bfloat16 weight copies (tensor.HalfWeightMatMuler), in BF16
// product precision, NewDecoder copies the weight matrices a step multiplies and steps of at
// most the backend's HalfWeightRows tokens read the copies: half the bytes, the same bits.
// The copies are those of the weights at NewDecoder or the last Reset, which rounds them again
// at the next step: a decoder kept across a weight update must be Reset, as its cache must.
type Decoder struct {
	*kvrows.Decoder
	m *Model

	kcache, vcache []*tensor.Tensor // per layer (B, limit, C)
	tokens         *tensor.Tensor   // int32 (B*limit)
	x, ln, atty    *tensor.Tensor   // (B*limit, C)
	qkv            *tensor.Tensor   // (B*limit, 3C)
	fch            *tensor.Tensor   // (B*limit, 4C)
	mean, rstd     *tensor.Tensor   // (B*limit)
	last, lastLN   *tensor.Tensor   // (B, C)
	logits         *tensor.Tensor   // (B, Vp)
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
	d := &Decoder{m: m}
	C, N := cfg.Channels, B*limit
	bufs := kvrows.NewBuffers(m.Backend)
	for l := 0; l < cfg.NumLayers; l++ {
		d.kcache = append(d.kcache, bufs.New(tensor.Float32, B, limit, C))
		d.vcache = append(d.vcache, bufs.New(tensor.Float32, B, limit, C))
	}
	d.tokens = bufs.New(tensor.Int32, N)
	d.x, d.ln, d.atty = bufs.New(tensor.Float32, N, C), bufs.New(tensor.Float32, N, C), bufs.New(tensor.Float32, N, C)
	d.qkv = bufs.New(tensor.Float32, N, 3*C)
	d.fch = bufs.New(tensor.Float32, N, 4*C)
	d.mean, d.rstd = bufs.New(tensor.Float32, N), bufs.New(tensor.Float32, N)
	d.last, d.lastLN = bufs.New(tensor.Float32, B, C), bufs.New(tensor.Float32, B, C)
	d.logits = bufs.New(tensor.Float32, B, cfg.PaddedVocabSize)
	var err error
	d.Decoder, err = kvrows.NewDecoder(kvrows.DecoderParts{Family: "gpt2", Rows: kvrows.New(B, limit), Width: C,
		Caches: append(slices.Clone(d.kcache), d.vcache...), Vocab: cfg.VocabSize, Stride: cfg.PaddedVocabSize,
		Buffers: bufs, Weights: m.decoderWeights(), Forward: d.forward})
	if err != nil {
		return nil, fmt.Errorf("gpt2: allocating decoder for B=%d length %d: %w", B, limit, err)
	}
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

// forward runs the model over the gathered tokens of the planned rows. Everything but the position
// embedding and the attention works per token, over all rows' tokens at once; those two run
// once per run of consecutive rows at one position (one call for a Step, or for the rows of
// one forked group), so rows scattered over positions cost an attention dispatch each per
// layer (a kernel taking a position per row would make it one).
func (d *Decoder) forward(p *kvrows.Plan, tokens []int32, matMul kvrows.MatMul) (*tensor.Tensor, error) {
	cfg := d.m.Config
	C, NH, Vp, limit := cfg.Channels, cfg.NumHeads, cfg.PaddedVocabSize, d.Limit()
	be := d.m.Backend
	N, R := p.Tokens, len(p.Spans)
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
		matMul(qkv, ln, lp.qkvw.Value, lp.qkvb.Value, tensor.MatMulParams{M: N, N: 3 * C, K: C, TransB: true})
		for _, r := range p.Runs {
			n, cache := r.Count*r.N, r.Row*limit*C
			kc, vc := d.kcache[l].View(cache, r.Count, limit, C), d.vcache[l].View(cache, r.Count, limit, C)
			be.AttentionDecode(atty.View(r.Off*C, n, C), kc, vc, qkv.View(r.Off*3*C, n, 3*C), r.Count, r.N, r.Pos, limit, C, NH)
		}
		// x += atty @ attprojw^T + b, accumulated in place: first the bias-free product into ln.
		matMul(ln, atty, lp.attprojw.Value, lp.attprojb.Value, tensor.MatMulParams{M: N, N: C, K: C, TransB: true})
		be.ResidualLayerNormForward(x, ln, mean, rstd, x, ln, lp.ln2w.Value, lp.ln2b.Value, N, C)
		// GELU in place: the decoder keeps no pre-activation.
		matMul(fch, ln, lp.fcw.Value, lp.fcb.Value, tensor.MatMulParams{M: N, N: 4 * C, K: C, TransB: true, GeluOut: fch})
		matMul(ln, fch, lp.fcprojw.Value, lp.fcprojb.Value, tensor.MatMulParams{M: N, N: C, K: 4 * C, TransB: true})
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
	matMul(logits, lastLN, d.m.wte.Value, nil, tensor.MatMulParams{M: R, N: Vp, K: C, TransB: true})
	return logits, nil
}

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab): logits
// beyond it are padding.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }
