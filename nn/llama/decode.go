package llama

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"

	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder runs the model incrementally with a key/value cache: each Step feeds the next tokens
// of B rows that share their position and returns the logits of each row's last token. It
// reads the model's parameters and owns its buffers. The caches hold every query head's keys
// and values (KV heads repeated), the layout the attention kernel reads.
type Decoder struct {
	m        *Model
	B, limit int
	pos      int

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
	hostLogits     []float32
	owned          []*tensor.Tensor
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
	if err := tensor.CheckFits(m.Backend, c.DecoderBytes(B, limit, rank), fmt.Sprintf("llama: a decoder of %d rows of %d positions (its key/value cache and activations)", B, limit)); err != nil {
		return nil, err
	}
	if err := m.ensureRope(limit); err != nil {
		return nil, err
	}
	d := &Decoder{m: m, B: B, limit: limit}
	N, C, HD, KVD, I := B*limit, c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate
	var err error
	alloc := func(dtype tensor.DType, shape ...int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		var t *tensor.Tensor
		if t, err = tensor.New(m.Backend, dtype, shape...); t != nil {
			d.owned = append(d.owned, t)
		}
		return t
	}
	for range c.Layers {
		d.kcache = append(d.kcache, alloc(tensor.Float32, B, limit, HD))
		d.vcache = append(d.vcache, alloc(tensor.Float32, B, limit, HD))
	}
	d.tokens = alloc(tensor.Int32, N)
	d.x, d.h, d.o = alloc(tensor.Float32, N, C), alloc(tensor.Float32, N, C), alloc(tensor.Float32, N, C)
	d.q, d.qn, d.qr = alloc(tensor.Float32, N, HD), alloc(tensor.Float32, N, HD), alloc(tensor.Float32, N, HD)
	d.k, d.kn, d.kr, d.v = alloc(tensor.Float32, N, KVD), alloc(tensor.Float32, N, KVD), alloc(tensor.Float32, N, KVD), alloc(tensor.Float32, N, KVD)
	d.qkv, d.atty = alloc(tensor.Float32, N, 3*HD), alloc(tensor.Float32, N, HD)
	d.gate, d.up, d.act = alloc(tensor.Float32, N, I), alloc(tensor.Float32, N, I), alloc(tensor.Float32, N, I)
	d.rstd = alloc(tensor.Float32, N*c.Heads)
	d.last, d.lastN = alloc(tensor.Float32, B, C), alloc(tensor.Float32, B, C)
	d.logits = alloc(tensor.Float32, B, c.Vocab)
	if m.lora != nil {
		d.xa, d.xas = alloc(tensor.Float32, N, m.lora.cfg.Rank), alloc(tensor.Float32, N, m.lora.cfg.Rank)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("llama: allocating a decoder for B=%d length %d: %w", B, limit, err)
	}
	d.hostLogits = make([]float32, B*c.Vocab)
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

// Close frees the decoder's buffers.
func (d *Decoder) Close() {
	for _, t := range d.owned {
		d.m.Backend.Free(t.Storage)
	}
	d.owned = nil
}

// Reset starts a new sequence.
func (d *Decoder) Reset() { d.pos = 0 }

// Pos is the number of positions fed so far.
func (d *Decoder) Pos() int { return d.pos }

// Limit is the number of positions the decoder holds.
func (d *Decoder) Limit() int { return d.limit }

// Rows is the decoder's batch size.
func (d *Decoder) Rows() int { return d.B }

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab); rows hold
// vocab_size logits.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }

// Step feeds Tq tokens per row (tokens is B*Tq, row-major) at the next positions and returns
// the logits of each row's last new position, (B, V) on the host, reused by the next Step.
func (d *Decoder) Step(tokens []int32, Tq int) ([]float32, error) {
	m, c := d.m, d.m.Config
	B := d.B
	if Tq <= 0 || len(tokens) != B*Tq {
		return nil, fmt.Errorf("llama: decoder step got %d tokens for %d rows of %d", len(tokens), B, Tq)
	}
	if d.pos+Tq > d.limit {
		return nil, fmt.Errorf("llama: decoder holds %d positions; %d + %d would exceed it", d.limit, d.pos, Tq)
	}
	if err := m.checkTokens("decoder tokens", tokens, B, Tq); err != nil {
		return nil, err
	}
	be := m.Backend
	N, C, H, KV, D, I := B*Tq, c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate
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
		be.MatMul(out, in, w, bias, tensor.MatMulParams{M: N, N: n, K: k, TransB: true})
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
		be.RoPEForward(qr, qin, m.rope, N, Tq, d.pos, H, H, HD)
		be.RoPEForward(kr, kin, m.rope, N, Tq, d.pos, KV, KV, KVD)
		be.PackQKV(qkv, qr, kr, v, N, H, KV, D)
		be.AttentionDecode(atty, d.kcache[l], d.vcache[l], qkv, B, Tq, d.pos, d.limit, HD, H)
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
	for b := range B {
		be.Copy(d.last.View(b*C, C), x.View((b*Tq+Tq-1)*C, C))
	}
	be.RMSNormForward(d.lastN, d.rstd.View(0, B), d.last, m.norm.Value, B, C, eps)
	be.MatMul(d.logits, d.lastN, m.head.Value, nil, tensor.MatMulParams{M: B, N: c.Vocab, K: C, TransB: true})
	if err := be.Download(d.hostLogits, d.logits); err != nil {
		return nil, err
	}
	d.pos += Tq
	return d.hostLogits, nil
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
