package cpu

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// The ops of the Llama family: RMSNorm, rotary embeddings, the SiLU-gated MLP activation and a
// token embedding without positions. Each runs over fixed chunks of rows (or columns, for
// reductions over rows), so results never depend on the thread count.

// llamaKind selects what a llamaJob computes.
type llamaKind int

const (
	rmsForward llamaKind = iota
	rmsBackwardInput
	rmsBackwardWeight
	ropeForward
	ropeBackward
	swigluForward
	swigluBackward
	embedForward
	embedBackward
	packForward
	packBackward
)

// llamaJob holds one op's operands; rows are of width C (RMSNorm, embedding), H heads of D
// (RoPE); SwiGLU runs over flat chunks of elements.
type llamaJob struct {
	kind                 llamaKind
	n, C, rows           int
	eps                  float32
	out, inp, w, rstd    []float32
	dinp, dout, dw       []float32
	table                []float32 // RoPE: per position, D/2 cosines then D/2 sines
	T, pos0, H, rotHeads int
	tokens               []int32
	q, k, v, dq, dk, dv  []float32 // PackQKV
	KV, D                int
	addA, addB           []float32 // rmsForward: when set, each row of inp is first addA + addB
}

func (j *llamaJob) run(_, c int) {
	if j.kind == rmsBackwardWeight || j.kind == embedBackward {
		lo, hi := c*colChunk, min((c+1)*colChunk, j.C)
		if j.kind == rmsBackwardWeight {
			rmsWeightGrad(j, lo, hi)
		} else {
			embedGrad(j, lo, hi)
		}
		return
	}
	lo, hi := c*j.rows, min((c+1)*j.rows, j.n)
	switch j.kind {
	case swigluForward:
		swigluRange(j.out[lo:hi], j.inp[lo:hi], j.w[lo:hi])
		return
	case swigluBackward:
		swigluBackwardRange(j.dinp[lo:hi], j.dw[lo:hi], j.inp[lo:hi], j.w[lo:hi], j.dout[lo:hi])
		return
	}
	for r := lo; r < hi; r++ {
		switch j.kind {
		case rmsForward:
			if j.addA != nil { // the residual add while the row is in cache
				x, a, b := j.inp[r*j.C:(r+1)*j.C], j.addA[r*j.C:(r+1)*j.C], j.addB[r*j.C:(r+1)*j.C]
				for i := range x {
					x[i] = a[i] + b[i]
				}
			}
			j.rstd[r] = rmsNormRow(j.out[r*j.C:(r+1)*j.C], j.inp[r*j.C:(r+1)*j.C], j.w, j.eps)
		case rmsBackwardInput:
			rmsNormBackwardRow(j.dinp[r*j.C:(r+1)*j.C], j.dout[r*j.C:(r+1)*j.C], j.inp[r*j.C:(r+1)*j.C], j.w, j.rstd[r])
		case ropeForward, ropeBackward:
			ropeRow(j, r)
		case packForward:
			packRow(j, r)
		case packBackward:
			unpackRow(j, r)
		case embedForward:
			ix := int(j.tokens[r])
			copy(j.out[r*j.C:(r+1)*j.C], j.w[ix*j.C:(ix+1)*j.C])
		}
	}
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

func (b *Backend) runLlama(rows bool) {
	if rows {
		b.pool.do(&b.llama, ceilDiv(b.llama.n, b.llama.rows))
	} else {
		b.pool.do(&b.llama, ceilDiv(b.llama.C, colChunk))
	}
	b.llama = llamaJob{}
}

// RMSNormForward implements tensor.Backend.
func (b *Backend) RMSNormForward(out, rstd, inp, weight *tensor.Tensor, N, C int, eps float32) {
	defer b.unlock(b.lock("RMSNormForward"))
	b.rmsNormRows("RMSNormForward", "inp", out, rstd, inp, nil, nil, weight, N, C, eps)
}

// ResidualRMSNormForward implements tensor.Backend.
func (b *Backend) ResidualRMSNormForward(residual, out, rstd, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	defer b.unlock(b.lock("ResidualRMSNormForward"))
	b.rmsNormRows("ResidualRMSNormForward", "residual", out, rstd, residual, x, y, weight, N, C, eps)
}

// rmsNormRows normalises N rows of inp (named inpName), or, with x and y set, of inp = x + y
// made row by row while the row is in cache.
func (b *Backend) rmsNormRows(op, inpName string, out, rstd, inp, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	b.llama = llamaJob{kind: rmsForward, n: N, C: C, rows: rowsPer(2 * C), eps: eps,
		out: f32(op, "out", out, N*C), inp: f32(op, inpName, inp, N*C), w: f32(op, "weight", weight, C), rstd: f32(op, "rstd", rstd, N)}
	if x != nil {
		b.llama.rows, b.llama.addA, b.llama.addB = rowsPer(4*C), f32(op, "a", x, N*C), f32(op, "b", y, N*C)
	}
	b.runLlama(true)
}

// RMSNormBackward implements tensor.Backend.
func (b *Backend) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("RMSNormBackward"))
	const op = "RMSNormBackward"
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	j := llamaJob{kind: rmsBackwardInput, n: N, C: C, rows: rowsPer(3 * C),
		dinp: f32(op, "dinp", dinp, N*C), dout: f32(op, "dout", dout, N*C), inp: f32(op, "inp", inp, N*C),
		w: f32(op, "weight", weight, C), rstd: f32(op, "rstd", rstd, N)}
	b.llama = j
	b.runLlama(true)
	if dweight == nil {
		return
	}
	j.kind, j.dw = rmsBackwardWeight, f32(op, "dweight", dweight, C)
	b.llama = j
	b.runLlama(false)
}

// ropeArgs checks RoPE's dimensions and returns the head width.
func ropeArgs(op string, N, T, pos0, H, rotHeads, rowLen int) int {
	dims(op, N, T, pos0, H, rotHeads, rowLen)
	if H == 0 || rowLen%H != 0 || (rowLen/H)%2 != 0 || rotHeads > H || (N > 0 && (T == 0 || N%T != 0)) {
		panic(fmt.Sprintf("cpu: %s: rows of %d in %d heads (%d rotated), N=%d T=%d: want even heads and N a multiple of T", op, rowLen, H, rotHeads, N, T))
	}
	return rowLen / H
}

// RoPEForward implements tensor.Backend.
func (b *Backend) RoPEForward(out, inp, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	defer b.unlock(b.lock("RoPEForward"))
	const op = "RoPEForward"
	D := ropeArgs(op, N, T, pos0, H, rotHeads, rowLen)
	if N == 0 {
		return
	}
	b.llama = llamaJob{kind: ropeForward, n: N, C: rowLen, rows: rowsPer(rowLen), T: T, pos0: pos0, H: H, rotHeads: rotHeads,
		out: f32(op, "out", out, N*rowLen), inp: f32(op, "inp", inp, N*rowLen), table: f32(op, "table", table, (pos0+T)*D)}
	b.runLlama(true)
}

// RoPEBackward implements tensor.Backend.
func (b *Backend) RoPEBackward(dinp, dout, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	defer b.unlock(b.lock("RoPEBackward"))
	const op = "RoPEBackward"
	D := ropeArgs(op, N, T, pos0, H, rotHeads, rowLen)
	if N == 0 {
		return
	}
	b.llama = llamaJob{kind: ropeBackward, n: N, C: rowLen, rows: rowsPer(rowLen), T: T, pos0: pos0, H: H, rotHeads: rotHeads,
		dinp: f32(op, "dinp", dinp, N*rowLen), dout: f32(op, "dout", dout, N*rowLen), table: f32(op, "table", table, (pos0+T)*D)}
	b.runLlama(true)
}

// SwiGLUForward implements tensor.Backend.
func (b *Backend) SwiGLUForward(out, gate, up *tensor.Tensor, n int) {
	defer b.unlock(b.lock("SwiGLUForward"))
	const op = "SwiGLUForward"
	dims(op, n)
	if n == 0 {
		return
	}
	b.llama = llamaJob{kind: swigluForward, n: n, rows: ewChunk,
		out: f32(op, "out", out, n), inp: f32(op, "gate", gate, n), w: f32(op, "up", up, n)}
	b.runLlama(true)
}

// SwiGLUBackward implements tensor.Backend.
func (b *Backend) SwiGLUBackward(dgate, dup, gate, up, dout *tensor.Tensor, n int) {
	defer b.unlock(b.lock("SwiGLUBackward"))
	const op = "SwiGLUBackward"
	dims(op, n)
	if n == 0 {
		return
	}
	b.llama = llamaJob{kind: swigluBackward, n: n, rows: ewChunk,
		dinp: f32(op, "dgate", dgate, n), dw: f32(op, "dup", dup, n), inp: f32(op, "gate", gate, n), w: f32(op, "up", up, n),
		dout: f32(op, "dout", dout, n)}
	b.runLlama(true)
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

// packRow writes row r of the packed q|k|v with each KV head repeated H/KV times.
func packRow(j *llamaJob, r int) {
	H, KV, D := j.H, j.KV, j.D
	qw, kw := H*D, KV*D
	out := j.out[r*3*qw : (r+1)*3*qw]
	copy(out[:qw], j.q[r*qw:(r+1)*qw])
	for h := range H {
		g := h / (H / KV)
		copy(out[qw+h*D:qw+(h+1)*D], j.k[r*kw+g*D:r*kw+(g+1)*D])
		copy(out[2*qw+h*D:2*qw+(h+1)*D], j.v[r*kw+g*D:r*kw+(g+1)*D])
	}
}

// unpackRow accumulates row r of dqkv into dq, dk and dv: each KV head's H/KV copies are
// summed in head order, then added (as the Vulkan kernel does, so the bits agree).
func unpackRow(j *llamaJob, r int) {
	H, KV, D := j.H, j.KV, j.D
	qw, kw, rep := H*D, KV*D, H/KV
	in := j.dout[r*3*qw : (r+1)*3*qw]
	addTo(j.dq[r*qw:(r+1)*qw], in[:qw])
	var buf [256]float32
	for part, dst := range [2][]float32{j.dk[r*kw : (r+1)*kw], j.dv[r*kw : (r+1)*kw]} {
		src := in[(part+1)*qw : (part+2)*qw]
		for g := range KV {
			copies := src[g*rep*D : (g+1)*rep*D]
			for lo := 0; lo < D; lo += len(buf) {
				hi := min(lo+len(buf), D)
				sum := buf[:hi-lo]
				copy(sum, copies[lo:hi])
				for c := 1; c < rep; c++ {
					addTo(sum, copies[c*D+lo:c*D+hi])
				}
				addTo(dst[g*D+lo:g*D+hi], sum)
			}
		}
	}
}

// addTo sets dst[i] += src[i] (axpy with a = 1: the product is exact, so the bits are the sum's).
func addTo(dst, src []float32) { axpy(dst, src, 1) }

func packArgs(op string, N, H, KV, D int) {
	dims(op, N, H, KV, D)
	if KV == 0 || H%KV != 0 {
		panic(fmt.Sprintf("cpu: %s: %d query heads are not a multiple of %d KV heads", op, H, KV))
	}
}

// PackQKV implements tensor.Backend.
func (b *Backend) PackQKV(qkv, q, k, v *tensor.Tensor, N, H, KV, D int) {
	defer b.unlock(b.lock("PackQKV"))
	const op = "PackQKV"
	packArgs(op, N, H, KV, D)
	if N*H*D == 0 {
		return
	}
	b.llama = llamaJob{kind: packForward, n: N, rows: rowsPer(3 * H * D), H: H, KV: KV, D: D,
		out: f32(op, "qkv", qkv, 3*N*H*D), q: f32(op, "q", q, N*H*D), k: f32(op, "k", k, N*KV*D), v: f32(op, "v", v, N*KV*D)}
	b.runLlama(true)
}

// PackQKVBackward implements tensor.Backend.
func (b *Backend) PackQKVBackward(dq, dk, dv, dqkv *tensor.Tensor, N, H, KV, D int) {
	defer b.unlock(b.lock("PackQKVBackward"))
	const op = "PackQKVBackward"
	packArgs(op, N, H, KV, D)
	if N*H*D == 0 {
		return
	}
	b.llama = llamaJob{kind: packBackward, n: N, rows: rowsPer(3 * H * D), H: H, KV: KV, D: D,
		dout: f32(op, "dqkv", dqkv, 3*N*H*D), dq: f32(op, "dq", dq, N*H*D), dk: f32(op, "dk", dk, N*KV*D), dv: f32(op, "dv", dv, N*KV*D)}
	b.runLlama(true)
}
