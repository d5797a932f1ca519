package cpu

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

type encJob struct {
	T, C, rows    int
	n             int
	out, wte, wpe []float32
	tokens        []int32
}

func (j *encJob) run(_, c int) {
	lo := c * j.rows
	hi := min(lo+j.rows, j.n)
	C := j.C
	for r := lo; r < hi; r++ {
		ix := int(j.tokens[r])
		t := r % j.T
		o := j.out[r*C : (r+1)*C]
		we := j.wte[ix*C : (ix+1)*C]
		wp := j.wpe[t*C : (t+1)*C]
		we, wp = we[:len(o)], wp[:len(o)]
		for i := range o {
			o[i] = we[i] + wp[i]
		}
	}
}

// tokenTable returns the n token ids in tokens and the row count V of table (V x C), after
// checking every id is a row of it.
func tokenTable(op string, tokens *tensor.Tensor, n int, table *tensor.Tensor, C int) ([]int32, int) {
	tok := i32(op, "tokens", tokens, n)
	if C == 0 {
		panic(fmt.Sprintf("cpu: %s: C is 0", op))
	}
	V := table.Numel() / C
	checkTokens(op, tok, V)
	return tok, V
}

// EncoderForward implements tensor.Backend.
func (b *Backend) EncoderForward(out, tokens, wte, wpe *tensor.Tensor, B, T, C int) {
	defer b.unlock(b.lock("EncoderForward"))
	const op = "EncoderForward"
	dims(op, B, T, C)
	if B*T == 0 {
		return
	}
	tok, V := tokenTable(op, tokens, B*T, wte, C)
	b.enc = encJob{T: T, C: C, rows: rowsPer(2 * C), n: B * T,
		out: f32(op, "out", out, B*T*C), wte: f32(op, "wte", wte, V*C), wpe: f32(op, "wpe", wpe, T*C), tokens: tok}
	b.pool.do(&b.enc, ceilDiv(B*T, b.enc.rows))
	b.enc = encJob{}
}

// EncoderBackward implements tensor.Backend. Chunks own columns and visit positions in order,
// so repeated tokens accumulate in the same order as llm.c's loop.
func (b *Backend) EncoderBackward(dwte, dwpe, dout, tokens *tensor.Tensor, B, T, C int) {
	defer b.unlock(b.lock("EncoderBackward"))
	const op = "EncoderBackward"
	dims(op, B, T, C)
	if B*T == 0 {
		return
	}
	tok, V := tokenTable(op, tokens, B*T, dwte, C)
	b.colj = colJob{kind: colEncoder, rows: B * T, C: C, T: T, tokens: tok,
		dout: f32(op, "dout", dout, B*T*C), d1: f32(op, "dwte", dwte, V*C), d2: f32(op, "dwpe", dwpe, T*C)}
	b.pool.do(&b.colj, ceilDiv(C, colChunk))
	b.colj = colJob{}
}

// embedGrad accumulates dwte[tokens[r]] += dout[r] for columns lo..hi, rows in order.
func embedGrad(j *llamaJob, lo, hi int) {
	for r := 0; r < j.n; r++ {
		ix := int(j.tokens[r])
		d, w := j.dout[r*j.C+lo:r*j.C+hi], j.dw[ix*j.C+lo:ix*j.C+hi]
		for i := range d {
			w[i] += d[i]
		}
	}
}

// EmbeddingForward implements tensor.Backend.
func (b *Backend) EmbeddingForward(out, tokens, wte *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("EmbeddingForward"))
	const op = "EmbeddingForward"
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	tok, V := tokenTable(op, tokens, N, wte, C)
	b.llama = llamaJob{kind: embedForward, n: N, C: C, rows: rowsPer(C), out: f32(op, "out", out, N*C), w: f32(op, "wte", wte, V*C), tokens: tok}
	b.runLlama(true)
}

// EmbeddingBackward implements tensor.Backend. Chunks own columns and visit rows in order.
func (b *Backend) EmbeddingBackward(dwte, dout, tokens *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("EmbeddingBackward"))
	const op = "EmbeddingBackward"
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	tok, V := tokenTable(op, tokens, N, dwte, C)
	b.llama = llamaJob{kind: embedBackward, n: N, C: C, dw: f32(op, "dwte", dwte, V*C), dout: f32(op, "dout", dout, N*C), tokens: tok}
	b.runLlama(false)
}
