package llama

import (
	"fmt"

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
//
// On a backend that multiplies by bfloat16 weight copies (tensor.HalfWeightMatMuler), in BF16
// product precision, NewDecoder copies the weight matrices a step multiplies (not LoRA
// adapters, which stay float32) and steps of at most the backend's HalfWeightRows tokens read
// the copies: half the bytes, the same bits. The copies are those of the weights at NewDecoder
// or the last Reset, which rounds them again at the next step: a decoder kept across an update
// of the base weights (a MergeLoRA, a full fine-tune's step) must be Reset, as its cache must.
type Decoder struct {
	m        *Model
	B, limit int
	rows     *kvrows.Rows

	kcache, vcache []*tensor.Tensor // per layer (B, limit, H·D)
	caches         []*tensor.Tensor // kcache then vcache, what Fork copies
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
	halves         *halfweights.Set // bfloat16 weight copies; nil without
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
	d := &Decoder{m: m, B: B, limit: limit, rows: kvrows.New(B, limit)}
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
	if err == nil {
		d.halves, err = halfweights.New(m.Backend, m.decoderWeights())
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("llama: allocating a decoder for B=%d length %d: %w", B, limit, err)
	}
	d.hostLogits = make([]float32, B*c.Vocab)
	d.caches = append(append(d.caches, d.kcache...), d.vcache...)
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

// WeightCopyBytes is the memory of the decoder's bfloat16 weight copies (0 without).
func (d *Decoder) WeightCopyBytes() int64 { return d.halves.Bytes() }

// Close frees the decoder's buffers and weight copies.
func (d *Decoder) Close() {
	for _, t := range d.owned {
		d.m.Backend.Free(t.Storage)
	}
	d.owned = nil
	d.halves.Free()
	d.halves = nil
}

// Limit is the number of positions the decoder holds.
func (d *Decoder) Limit() int { return d.limit }

// Rows is the decoder's batch size.
func (d *Decoder) Rows() int { return d.B }

// VocabSize is the number of logits per row that can be sampled (Model.TokenVocab); rows hold
// vocab_size logits.
func (d *Decoder) VocabSize() int { return d.m.TokenVocab() }

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
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// Fork copies row src's cache into each dst row and sets them at src's position, so rows that
// share a prefix (a group's prompt) prefill it once; each then goes on with StepRows.
func (d *Decoder) Fork(src int, dst []int) error {
	c := d.m.Config
	if err := d.rows.Fork(d.m.Backend, d.caches, c.Heads*c.HeadDim, src, dst); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// ForkPrefix copies the first n positions of row src's cache (n at most its position) into
// each dst row and sets them at n: rows join a group's prompt after the row that prefilled it
// has gone on decoding.
func (d *Decoder) ForkPrefix(src, n int, dst []int) error {
	c := d.m.Config
	if err := d.rows.ForkPrefix(d.m.Backend, d.caches, c.Heads*c.HeadDim, src, n, dst); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// Step feeds Tq tokens per row (tokens is B*Tq, row-major) at the next positions, which all
// rows must share, and returns the logits of each row's last new position, (B, V) on the host,
// reused by the next step.
func (d *Decoder) Step(tokens []int32, Tq int) ([]float32, error) {
	all, err := d.rows.All(tokens, Tq)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return d.StepRows(all, tokens, Tq)
}

// StepRows feeds Tq tokens to each listed row (tokens is len(rows)*Tq, in the order of rows),
// each at its own next position, and returns the logits of each listed row's last new
// position, (len(rows), V) on the host, reused by the next step. Rows not listed keep their
// cache and position.
func (d *Decoder) StepRows(rows []int, tokens []int32, Tq int) ([]float32, error) {
	return d.step(rows, d.rows.Even(len(rows), Tq), tokens)
}

// StepRagged is StepRows with a token list of its own length per row: tokens[i] goes to rows[i].
// Rows decoding one sampled token and rows taking a longer turn (a tool's reply) share a step.
func (d *Decoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	lens, flat, err := d.rows.Ragged(rows, tokens)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return d.step(rows, lens, flat)
}

// step runs the model over the gathered tokens of the listed rows. Everything but the rotary
// embedding and the attention works per token, over all rows' tokens at once; those two run
// once per run of consecutive rows at one position (one call for a Step, or for the rows of
// one forked group), so rows scattered over positions cost three dispatches each per layer
// (two rotations and the attention; kernels taking a position per row would make them one).
func (d *Decoder) step(rows, lens []int, tokens []int32) ([]float32, error) {
	m, c := d.m, d.m.Config
	p, err := d.rows.Plan(rows, lens, tokens, c.Vocab)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if err := d.halves.Refresh(); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	be := m.Backend
	N, R, C, H, KV, D, I := p.Tokens, len(rows), c.Hidden, c.Heads, c.KVHeads, c.HeadDim, c.Intermediate
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
		d.halves.MatMul(be, out, in, w, bias, tensor.MatMulParams{M: N, N: n, K: k, TransB: true})
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
			n, cache := r.Count*r.N, r.Row*d.limit*HD
			kc, vc := d.kcache[l].View(cache, r.Count, d.limit, HD), d.vcache[l].View(cache, r.Count, d.limit, HD)
			be.AttentionDecode(atty.View(r.Off*HD, n, HD), kc, vc, qkv.View(r.Off*3*HD, n, 3*HD), r.Count, r.N, r.Pos, d.limit, HD, H)
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
	d.halves.MatMul(be, logits, lastN, m.head.Value, nil, tensor.MatMulParams{M: R, N: c.Vocab, K: C, TransB: true})
	host := d.hostLogits[:R*c.Vocab]
	if err := be.Download(host, logits); err != nil {
		return nil, err
	}
	d.rows.Advance(p)
	return host, nil
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
