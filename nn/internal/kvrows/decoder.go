package kvrows

import (
	"fmt"

	"github.com/vkgrad/vkgrad/nn/internal/halfweights"
	"github.com/vkgrad/vkgrad/tensor"
)

// Decoder is the part of a key/value-cache decoder that does not depend on the model: its rows
// and their positions, the buffers it owns, its bfloat16 weight copies, and the three ways to
// feed tokens ([Decoder.Step], [Decoder.StepRows], [Decoder.StepRagged]), which plan the step,
// run the model's [Forward] and move the rows on. A model package's decoder embeds it, giving
// [NewDecoder] its forward.
type Decoder struct {
	family  string // prefixed to errors: "gpt2", "llama"
	be      tensor.Backend
	rows    *Rows
	width   int              // floats per position of a cache row
	caches  []*tensor.Tensor // every layer's keys, then values, (rows, limit, width): what Fork copies
	vocab   int              // the tokens a step may feed are below it
	stride  int              // logits per row
	host    []float32        // the logits on the host, reused by every step
	buffers *Buffers
	halves  *halfweights.Set // nil without copies
	forward Forward          // the model's
	matMul  MatMul           // the product forward multiplies its weights with (productOf)
}

// Forward runs a model over a planned step, whose p.Tokens tokens are gathered in row order,
// multiplying by its weight matrices through matMul, and returns the logits of each planned
// row's last token, (len(p.Spans), stride), on the device.
type Forward func(p *Plan, tokens []int32, matMul MatMul) (*tensor.Tensor, error)

// MatMul computes out = a @ wᵀ (+ bias) for a weight matrix w, as tensor.Backend's MatMul
// does (p.TransB set).
type MatMul func(out, a, w, bias *tensor.Tensor, p tensor.MatMulParams)

// DecoderParts are what a model package gives [NewDecoder].
type DecoderParts struct {
	Family        string           // prefixed to errors
	Rows          *Rows            // the decoder's rows, all empty
	Width         int              // floats per position of a cache row
	Caches        []*tensor.Tensor // every layer's keys, then values, (rows, limit, Width), from Buffers
	Vocab, Stride int              // token ids are below Vocab; a row has Stride logits
	Buffers       *Buffers         // everything the decoder allocated
	Weights       []halfweights.Matrix
	Forward       Forward // the model's forward over a planned step
}

// NewDecoder completes a decoder from its parts and makes the bfloat16 copies of p.Weights
// where the backend offers them (halfweights.New). If p.Buffers failed to allocate or the
// copies fail, it frees what was made and returns the error.
func NewDecoder(p DecoderParts) (*Decoder, error) {
	err := p.Buffers.Err()
	var halves *halfweights.Set
	if err == nil {
		halves, err = halfweights.New(p.Buffers.be, p.Weights)
	}
	if err != nil {
		p.Buffers.Free()
		return nil, err
	}
	return &Decoder{family: p.Family, be: p.Buffers.be, rows: p.Rows, width: p.Width, caches: p.Caches,
		vocab: p.Vocab, stride: p.Stride, host: make([]float32, p.Rows.Len()*p.Stride),
		buffers: p.Buffers, halves: halves, forward: p.Forward, matMul: productOf(p.Buffers.be, halves)}, nil
}

func (d *Decoder) wrap(err error) error { return fmt.Errorf("%s: %w", d.family, err) }

// Close frees the decoder's buffers and weight copies.
func (d *Decoder) Close() {
	d.buffers.Free()
	d.halves.Free()
	d.halves = nil
}

// WeightCopyBytes is the memory of the decoder's bfloat16 weight copies (0 without).
func (d *Decoder) WeightCopyBytes() int64 { return d.halves.Bytes() }

// Bytes is the memory the decoder holds besides its weight copies: its buffers and the host
// copy of the logits.
func (d *Decoder) Bytes() int64 {
	n := int64(len(d.host))
	for _, t := range d.buffers.owned {
		n += int64(t.Storage.Len())
	}
	return 4 * n // float32 and int32 elements alike
}

// Limit is the number of positions the decoder holds.
func (d *Decoder) Limit() int { return d.rows.limit }

// Rows is the decoder's batch size.
func (d *Decoder) Rows() int { return d.rows.Len() }

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
		return d.wrap(err)
	}
	return nil
}

// Fork copies row src's cache into each dst row and sets them at src's position, so rows that
// share a prefix (a group's prompt) prefill it once; each then goes on with StepRows.
func (d *Decoder) Fork(src int, dst []int) error {
	if err := d.rows.Fork(d.be, d.caches, d.width, src, dst); err != nil {
		return d.wrap(err)
	}
	return nil
}

// ForkPrefix copies the first n positions of row src's cache (n at most its position) into
// each dst row and sets them at n: rows join a group's prompt after the row that prefilled it
// has gone on decoding.
func (d *Decoder) ForkPrefix(src, n int, dst []int) error {
	if err := d.rows.ForkPrefix(d.be, d.caches, d.width, src, n, dst); err != nil {
		return d.wrap(err)
	}
	return nil
}

// Step feeds Tq tokens per row (tokens is B*Tq, row-major) at the next positions, which all
// rows must share, and returns the logits of each row's last new position, (B, stride) on the
// host; the slice is reused by the next step.
func (d *Decoder) Step(tokens []int32, Tq int) ([]float32, error) {
	all, err := d.rows.All(tokens, Tq)
	if err != nil {
		return nil, d.wrap(err)
	}
	return d.StepRows(all, tokens, Tq)
}

// StepRows feeds Tq tokens to each listed row (tokens is len(rows)*Tq, in the order of rows),
// each at its own next position, and returns the logits of each listed row's last new
// position, (len(rows), stride) on the host, reused by the next step. Rows not listed keep
// their cache and position.
func (d *Decoder) StepRows(rows []int, tokens []int32, Tq int) ([]float32, error) {
	return d.step(rows, d.rows.Even(len(rows), Tq), tokens)
}

// StepRagged is StepRows with a token list of its own length per row: tokens[i] goes to
// rows[i]. Rows decoding one sampled token and rows taking a longer turn (a tool's reply)
// share a step.
func (d *Decoder) StepRagged(rows []int, tokens [][]int32) ([]float32, error) {
	lens, flat, err := d.rows.Ragged(rows, tokens)
	if err != nil {
		return nil, d.wrap(err)
	}
	return d.step(rows, lens, flat)
}

// step plans the step, runs the model's forward, and moves the rows on once their logits are
// on the host.
func (d *Decoder) step(rows, lens []int, tokens []int32) ([]float32, error) {
	p, err := d.rows.Plan(rows, lens, tokens, d.vocab)
	if err != nil {
		return nil, d.wrap(err)
	}
	if err := d.halves.Refresh(); err != nil {
		return nil, d.wrap(err)
	}
	logits, err := d.forward(p, tokens, d.matMul)
	if err != nil {
		return nil, err
	}
	host := d.host[:len(rows)*d.stride]
	if err := d.be.Download(host, logits); err != nil {
		return nil, err
	}
	d.rows.Advance(p)
	return host, nil
}

// productOf is how a step multiplies by a weight matrix: the backend's MatMul, or through
// the bfloat16 copies halves when there are some (halfweights.Set.MatMul).
func productOf(be tensor.Backend, halves *halfweights.Set) MatMul {
	if halves == nil {
		return be.MatMul
	}
	return func(out, a, w, bias *tensor.Tensor, p tensor.MatMulParams) { halves.MatMul(be, out, a, w, bias, p) }
}

// Buffers allocates a decoder's tensors, keeping every one it made and the first error, so a
// decoder is laid out in one run of calls and checked once.
type Buffers struct {
	be    tensor.Backend
	err   error
	owned []*tensor.Tensor
}

// NewBuffers allocates on be.
func NewBuffers(be tensor.Backend) *Buffers { return &Buffers{be: be} }

// New allocates a tensor, or returns nil once an allocation has failed.
func (b *Buffers) New(dtype tensor.DType, shape ...int) *tensor.Tensor {
	if b.err != nil {
		return nil
	}
	t, err := tensor.New(b.be, dtype, shape...)
	if err != nil {
		b.err = err
		return nil
	}
	b.owned = append(b.owned, t)
	return t
}

// Err is the first allocation's error, or nil.
func (b *Buffers) Err() error { return b.err }

// Free frees every tensor allocated.
func (b *Buffers) Free() {
	for _, t := range b.owned {
		b.be.Free(t.Storage)
	}
	b.owned = nil
}
