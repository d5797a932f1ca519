package llama

import (
	"fmt"
	"slices"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/internal/halfweights"
	"github.com/vkgrad/vkgrad/nn/internal/kvrows"
	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder runs the model incrementally with a key/value cache over B rows, each at its own
// position: StepRows feeds the next tokens of some rows and returns the logits of each one's
// last token, Fork copies one row's cache into others, and Step feeds all rows at a shared
// position. It reads the model's parameters and owns its buffers. The caches hold every query
// head's keys and values (KV heads repeated), the layout the attention kernel reads.
// These steps are the embedded kvrows.Decoder's, which plans each and runs forward below.
//
// On a backend that multiplies by bfloat16 weight copies (tensor.HalfWeightMatMuler), in BF16
// product precision, NewDecoder copies the weight matrices a step multiplies (not LoRA
// adapters, which stay float32) and steps of at most the backend's HalfWeightRows tokens read
// the copies: half the bytes, the same bits. The copies are those of the weights at NewDecoder
// or the last Reset, which rounds them again at the next step: a decoder kept across an update
// of the base weights (a MergeLoRA, a full fine-tune's step) must be Reset, as its cache must.
type Decoder struct {
	*kvrows.Decoder
	m *Model

	kcache, vcache []*tensor.Tensor // per layer (B, limit, H·D)
	tokens         *tensor.Tensor
	x, h, o        *tensor.Tensor // (B*limit, C)
	q, qn, qr      *tensor.Tensor // (B*limit, H·D)
	k, kn, kr, v   *tensor.Tensor // (B*limit, KV·D)
	qkv            *tensor.Tensor // (B*limit, 3·H·D)
	atty           *tensor.Tensor // (B*limit, H·D)
	gate, up, act  *tensor.Tensor // (B*limit, I)
	rstd           *tensor.Tensor // (B*limit*H)
	last, lastN    *tensor.Tensor // (B, C)
	logits         *tensor.Tensor // (B, V)
	xa, xas        *tensor.Tensor // (B*limit, rank): the LoRA adapters' projection, when there are adapters
}

// NewDecoder allocates a decoder for B rows of up to limit positions.
func (m *Model) NewDecoder(B, limit int) (*Decoder, error) {
	c := m.Config
	if B <= 0 {
		return nil, fmt.Errorf("llama: decoder batch size %d must be positive", B)
	}
	if limit <= 0 || (c.MaxPositions > 0 && limit > c.MaxPositions) {
		return nil, fmt.Errorf("llama: decoder length %d must be in [1, max_position_embeddings=%d]", limit, c.MaxPositions)
	}
	rank := 0
	if m.lora != nil {
		rank = m.lora.cfg.Rank
	}
	if err := tensor.CheckFits(m.Backend, c.DecoderBytes(B, limit, rank)+m.DecoderCopyBytes(), fmt.Sprintf("llama: a decoder of %d rows of %d positions (its key/value cache, activations and bfloat16 weight copies)", B, limit)); err != nil {
		return nil, err
	}
	if err := m.ensureRope(limit); err != nil {
		return nil, err
	}
	d := &Decoder{m: m}
	N, C, HD, KVD, I := B*limit, c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate
	bufs := kvrows.NewBuffers(m.Backend)
	for range c.Layers {
		d.kcache = append(d.kcache, bufs.New(tensor.Float32, B, limit, HD))
		d.vcache = append(d.vcache, bufs.New(tensor.Float32, B, limit, HD))
	}
	d.tokens = bufs.New(tensor.Int32, N)
	d.x, d.h, d.o = bufs.New(tensor.Float32, N, C), bufs.New(tensor.Float32, N, C), bufs.New(tensor.Float32, N, C)
	d.q, d.qn, d.qr = bufs.New(tensor.Float32, N, HD), bufs.New(tensor.Float32, N, HD), bufs.New(tensor.Float32, N, HD)
	d.k, d.kn, d.kr, d.v = bufs.New(tensor.Float32, N, KVD), bufs.New(tensor.Float32, N, KVD), bufs.New(tensor.Float32, N, KVD), bufs.New(tensor.Float32, N, KVD)
	d.qkv, d.atty = bufs.New(tensor.Float32, N, 3*HD), bufs.New(tensor.Float32, N, HD)
	d.gate, d.up, d.act = bufs.New(tensor.Float32, N, I), bufs.New(tensor.Float32, N, I), bufs.New(tensor.Float32, N, I)
	d.rstd = bufs.New(tensor.Float32, N*c.Heads)
	d.last, d.lastN = bufs.New(tensor.Float32, B, C), bufs.New(tensor.Float32, B, C)
	d.logits = bufs.New(tensor.Float32, B, c.Vocab)
	if m.lora != nil {
		d.xa, d.xas = bufs.New(tensor.Float32, N, m.lora.cfg.Rank), bufs.New(tensor.Float32, N, m.lora.cfg.Rank)
	}
	var err error
	d.Decoder, err = kvrows.NewDecoder(kvrows.DecoderParts{Family: "llama", Rows: kvrows.New(B, limit), Width: HD,
		Caches: append(slices.Clone(d.kcache), d.vcache...), Vocab: c.Vocab, Stride: c.Vocab,
		Buffers: bufs, Weights: m.decoderWeights(), Forward: d.forward})
	if err != nil {
		return nil, fmt.Errorf("llama: allocating a decoder for B=%d length %d: %w", B, limit, err)
	}
	return d, nil
}

// DecoderBytes is what NewDecoder allocates for B rows of limit positions (LoRA adapters of
// the given rank, 0 for none), and the host copy of the logits.
func (c Config) DecoderBytes(B, limit, rank int) int64 {
	N, HD, KVD := int64(B*limit), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	Bc, C, I := int64(B), int64(c.Hidden), int64(c.Intermediate)
	floats := 2*int64(c.Layers)*Bc*int64(limit)*HD + N + 3*N*C + 3*N*HD + 4*N*KVD + 4*N*HD + 3*N*I +
		N*int64(c.Heads) + 2*Bc*C + Bc*int64(c.Vocab) + 2*N*int64(rank)
	return 4*floats + 4*Bc*int64(c.Vocab)
}

// decoderWeights lists the weight matrices a decoding step multiplies by, as (N, K) with
// op(B) = Wᵀ: each layer's seven projections and the lm head.
func (m *Model) decoderWeights() []halfweights.Matrix {
	c := m.Config
	C, HD, KVD, I := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate
	var ws []halfweights.Matrix
	for l := range m.layers {
		lp := &m.layers[l]
		ws = append(ws, halfweights.Matrix{W: lp.wq.Value, N: HD, K: C}, halfweights.Matrix{W: lp.wk.Value, N: KVD, K: C},
			halfweights.Matrix{W: lp.wv.Value, N: KVD, K: C}, halfweights.Matrix{W: lp.wo.Value, N: C, K: HD},
			halfweights.Matrix{W: lp.wgate.Value, N: I, K: C}, halfweights.Matrix{W: lp.wup.Value, N: I, K: C},
			halfweights.Matrix{W: lp.wdown.Value, N: C, K: I})
	}
	return append(ws, halfweights.Matrix{W: m.head.Value, N: c.Vocab, K: C})
}

// DecoderCopyBytes is the memory of the bfloat16 weight copies NewDecoder makes: two bytes per
// weight a step multiplies on a backend that offers copies in its product precision
// (tensor.HalfWeightsFor), else 0.
func (m *Model) DecoderCopyBytes() int64 { return halfweights.CopyBytes(m.Backend, m.decoderWeights()) }

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab); rows hold
// vocab_size logits.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }

// forward runs the model over the gathered tokens of the planned rows. Everything but the rotary
// embedding and the attention works per token, over all rows' tokens at once; those two run
// once per run of consecutive rows at one position (one call for a Step, or for the rows of
// one forked group), so rows scattered over positions cost three dispatches each per layer
// (two rotations and the attention; kernels taking a position per row would make them one).
func (d *Decoder) forward(p *kvrows.Plan, tokens []int32, matMul kvrows.MatMul) (*tensor.Tensor, error) {
	m, c, limit := d.m, d.m.Config, d.Limit()
	be := m.Backend
	N, R, C, H, KV, D, I := p.Tokens, len(p.Spans), c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate
	HD, KVD := H*D, KV*D
	eps := float32(c.RMSNormEps)
	tok := d.tokens.View(0, N)
	if err := be.UploadInt32(tok, tokens); err != nil {
		return nil, err
	}
	x, h, o := d.x.View(0, N, C), d.h.View(0, N, C), d.o.View(0, N, C)
	q, k, v := d.q.View(0, N, HD), d.k.View(0, N, KVD), d.v.View(0, N, KVD)
	qr, kr, qkv, atty := d.qr.View(0, N, HD), d.kr.View(0, N, KVD), d.qkv.View(0, N, 3*HD), d.atty.View(0, N, HD)
	gate, up, act := d.gate.View(0, N, I), d.up.View(0, N, I), d.act.View(0, N, I)
	var l int
	linear := func(module string, out, in, w, bias *tensor.Tensor, n, k int) {
		matMul(out, in, w, bias, tensor.MatMulParams{M: N, N: n, K: k, TransB: true})
		d.addAdapter(l, module, out, in)
	}
	be.EmbeddingForward(x, tok, m.embed.Value, N, C)
	be.RMSNormForward(h, d.rstd.View(0, N), x, m.layers[0].attnNorm.Value, N, C, eps)
	for l = range m.layers {
		lp := &m.layers[l]
		linear("q_proj", q, h, lp.wq.Value, varValue(lp.bq), HD, C)
		linear("k_proj", k, h, lp.wk.Value, varValue(lp.bk), KVD, C)
		linear("v_proj", v, h, lp.wv.Value, varValue(lp.bv), KVD, C)
		qin, kin := q, k
		if c.QKNorm {
			qin, kin = d.qn.View(0, N, HD), d.kn.View(0, N, KVD)
			be.RMSNormForward(qin, d.rstd.View(0, N*H), q, lp.qNorm.Value, N*H, D, eps)
			be.RMSNormForward(kin, d.rstd.View(0, N*KV), k, lp.kNorm.Value, N*KV, D, eps)
		}
		for _, r := range p.Runs {
			n := r.Count * r.N
			be.RoPEForward(qr.View(r.Off*HD, n, HD), qin.View(r.Off*HD, n, HD), m.rope, n, r.N, r.Pos, H, H, HD)
			be.RoPEForward(kr.View(r.Off*KVD, n, KVD), kin.View(r.Off*KVD, n, KVD), m.rope, n, r.N, r.Pos, KV, KV, KVD)
		}
		be.PackQKV(qkv, qr, kr, v, N, H, KV, D)
		for _, r := range p.Runs {
			n, cache := r.Count*r.N, r.Row*limit*HD
			kc, vc := d.kcache[l].View(cache, r.Count, limit, HD), d.vcache[l].View(cache, r.Count, limit, HD)
			be.AttentionDecode(atty.View(r.Off*HD, n, HD), kc, vc, qkv.View(r.Off*3*HD, n, 3*HD), r.Count, r.N, r.Pos, limit, HD, H)
		}
		linear("o_proj", o, atty, lp.wo.Value, nil, C, HD)
		be.ResidualRMSNormForward(x, h, d.rstd.View(0, N), x, o, lp.mlpNorm.Value, N, C, eps)
		linear("gate_proj", gate, h, lp.wgate.Value, nil, I, C)
		linear("up_proj", up, h, lp.wup.Value, nil, I, C)
		be.SwiGLUForward(act, gate, up, N*I)
		linear("down_proj", o, act, lp.wdown.Value, nil, C, I)
		if l+1 < len(m.layers) { // with the next layer's input norm, as the training forward does
			be.ResidualRMSNormForward(x, h, d.rstd.View(0, N), x, o, m.layers[l+1].attnNorm.Value, N, C, eps)
		} else {
			be.Add(x, x, o)
		}
	}
	last, lastN, logits := d.last.View(0, R, C), d.lastN.View(0, R, C), d.logits.View(0, R, c.Vocab)
	for i, s := range p.Spans {
		be.Copy(last.View(i*C, C), x.View((s.Off+s.N-1)*C, C))
	}
	be.RMSNormForward(lastN, d.rstd.View(0, R), last, m.norm.Value, R, C, eps)
	matMul(logits, lastN, m.head.Value, nil, tensor.MatMulParams{M: R, N: c.Vocab, K: C, TransB: true})
	return logits, nil
}

// addAdapter adds a layer's LoRA term to a linear layer's output, out += s·(in·Aᵀ)·Bᵀ, with the
// same kernels in the same order as the training forward (without dropout), so sampled and
// trained log-probs agree.
func (d *Decoder) addAdapter(layer int, module string, out, in *tensor.Tensor) {
	lo := d.m.lora
	if lo == nil || lo.off {
		return
	}
	ad := lo.layers[layer][module]
	if ad == nil {
		return
	}
	be, N, r := d.m.Backend, out.Shape[0], lo.cfg.Rank
	xa, xas := d.xa.View(0, N, r), d.xas.View(0, N, r)
	be.MatMul(xa, in, ad.A.Value, nil, tensor.MatMulParams{M: N, N: r, K: ad.in, TransB: true})
	be.Copy(xas, xa)
	be.Scale(xas, lo.scale)
	be.MatMul(out, xas, ad.B.Value, nil, tensor.MatMulParams{M: N, N: ad.out, K: r, TransB: true, Accumulate: true})
}

// varValue is v's value, or nil for an absent (nil) parameter such as a bias.
func varValue(v *autograd.Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.Value
}
