package vk

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// The ops of the Llama family: RMSNorm, rotary embeddings, the SiLU-gated MLP activation and
// a token embedding without positions. Row sums reduce in a fixed tree and column sums add
// rows in order, so results repeat bit for bit.

var (
	kRMSNormForward        = Kernel{Shader: "rmsnorm_forward", Bindings: 4, Push: 7}
	kResidualRMSNorm       = Kernel{Shader: "residual_rmsnorm_forward", Bindings: 6, Push: 9}
	kRMSNormBackward       = Kernel{Shader: "rmsnorm_backward", Bindings: 5, Push: 7}
	kRMSNormBackwardWeight = Kernel{Shader: "rmsnorm_backward_weight", Bindings: 4, Push: 6}
	kRoPE                  = Kernel{Shader: "rope", Bindings: 3, Push: 10}
	kSwiGLUForward         = Kernel{Shader: "swiglu_forward", Bindings: 3, Push: 4}
	kSwiGLUBackward        = Kernel{Shader: "swiglu_backward", Bindings: 5, Push: 6}
	kEmbeddingForward      = Kernel{Shader: "embedding_forward", Bindings: 3, Push: 7}
)

// RMSNormForward normalises N rows of C values, one workgroup per row.
func (b *Backend) RMSNormForward(out, rstd, inp, weight *tensor.Tensor, N, C int, eps float32) {
	b.rmsNormRows(kRMSNormForward, "RMSNormForward", "inp", out, rstd, inp, nil, nil, weight, N, C, eps)
}

// ResidualRMSNormForward sets residual = a + b and normalises it, one workgroup per row: the
// residual stream is written in the pass that sums the row, not by a dispatch of its own.
func (b *Backend) ResidualRMSNormForward(residual, out, rstd, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	b.rmsNormRows(kResidualRMSNorm, "ResidualRMSNormForward", "residual", out, rstd, residual, x, y, weight, N, C, eps)
}

// rmsNormRows runs k over N rows of inp (named inpName), or, with x and y set, of
// inp = x + y written as it goes.
func (b *Backend) rmsNormRows(k Kernel, op, inpName string, out, rstd, inp, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	nnDims(op, N, C)
	os, rs := nnF32(b, op, "out", out, N*C), nnF32(b, op, "rstd", rstd, N)
	is, ws := nnF32(b, op, inpName, inp, N*C), nnF32(b, op, "weight", weight, C)
	args := [6]nnArg{nnRows(os, out, C, N*C, true), nnRows(rs, rstd, 1, N, true), nnRows(is, inp, C, N*C, x != nil), nnWhole(ws, weight, C)}
	n := 4
	if x != nil {
		args[4], args[5], n = nnRows(nnF32(b, op, "a", x, N*C), x, C, N*C, false), nnRows(nnF32(b, op, "b", y, N*C), y, C, N*C, false), 6
	}
	if C == 0 {
		return
	}
	streams := 2.0 // inp read, out written; with x and y, both read and the residual written too
	if x != nil {
		streams = 4
	}
	b.dev.Cost(4*float64(N*C), 4*(streams*float64(N*C)+float64(N+C)))
	k = b.rowKernel(k)
	rows := func(cr int, f firsts) rmsNormForwardPush {
		return rmsNormForwardPush{Rows: uint32(cr), C: uint32(C), OffOut: f[0], OffRstd: f[1], OffInp: f[2], OffW: f[3], Eps: eps}
	}
	if x == nil {
		nnRun(b, k, op, N, args[:n], b.nnRowGroups, func(_, cr int, f firsts) rmsNormForwardPush { return rows(cr, f) })
		return
	}
	nnRun(b, k, op, N, args[:n], b.nnRowGroups, func(_, cr int, f firsts) residualRMSNormForwardPush {
		return residualRMSNormForwardPush{rmsNormForwardPush: rows(cr, f), OffA: f[4], OffBv: f[5]}
	})
}

// RMSNormBackward accumulates into dinp (a workgroup per row) and dweight (an invocation per
// column, adding rows in order).
func (b *Backend) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd *tensor.Tensor, N, C int) {
	const op = "RMSNormBackward"
	nnDims(op, N, C)
	dis := nnF32(b, op, "dinp", dinp, N*C)
	dos, is := nnF32(b, op, "dout", dout, N*C), nnF32(b, op, "inp", inp, N*C)
	ws, rs := nnF32(b, op, "weight", weight, C), nnF32(b, op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	b.dev.Cost(8*float64(N*C), 4*(4*float64(N*C)+float64(N+C))) // dout and inp read, dinp read and written
	nnRun(b, b.rowKernel(kRMSNormBackward), op, N, []nnArg{
		nnRows(dis, dinp, C, N*C, true), nnRows(dos, dout, C, N*C, false), nnRows(is, inp, C, N*C, false),
		nnWhole(ws, weight, C), nnRows(rs, rstd, 1, N, false),
	}, b.nnRowGroups, func(_, cr int, f firsts) rmsNormBackwardPush {
		return rmsNormBackwardPush{Rows: uint32(cr), C: uint32(C), OffDinp: f[0], OffDout: f[1], OffInp: f[2], OffW: f[3], OffRstd: f[4]}
	})
	if dweight == nil {
		return // a frozen weight
	}
	dws := nnF32(b, op, "dweight", dweight, C)
	// Chunks of rows run one after another, each adding its rows to dweight in order.
	b.dev.Cost(3*float64(N*C), 4*(2*float64(N*C)+float64(N)+2*float64(C)))
	nnRun(b, kRMSNormBackwardWeight, op, N, []nnArg{
		nnWhole(dws, dweight, C), nnRows(dos, dout, C, N*C, false), nnRows(is, inp, C, N*C, false), nnRows(rs, rstd, 1, N, false),
	}, func(int) [3]uint32 { return b.nnFlatGroups(C) }, func(_, cr int, f firsts) rmsNormBackwardWeightPush {
		return rmsNormBackwardWeightPush{Rows: uint32(cr), C: uint32(C), OffDw: f[0], OffDout: f[1], OffInp: f[2], OffRstd: f[3]}
	})
}

// rope runs the rotary embedding forward (dst = rotate(src)) or backward (dst += rotate⁻¹(src)).
func (b *Backend) rope(op string, dst, src, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int, backward bool) {
	nnDims(op, N, T, pos0, H, rotHeads, rowLen)
	if H == 0 || rowLen%H != 0 || (rowLen/H)%2 != 0 || rotHeads > H || (N > 0 && (T == 0 || N%T != 0)) {
		panic(fmt.Sprintf("vk: %s: rows of %d in %d heads (%d rotated), N=%d T=%d: want even heads and N a multiple of T", op, rowLen, H, rotHeads, N, T))
	}
	D := rowLen / H
	ds, ss, ts := nnF32(b, op, "dst", dst, N*rowLen), nnF32(b, op, "src", src, N*rowLen), nnF32(b, op, "table", table, (pos0+T)*D)
	if N == 0 {
		return
	}
	bw, streams := uint32(0), 2.0
	if backward {
		bw, streams = 1, 3 // dst is read too
	}
	b.dev.Cost(3*float64(N*rowLen), 4*(streams*float64(N*rowLen)+float64((pos0+T)*D)))
	// Chunks are whole sequences, so row % T is the position within the chunk too.
	nnRun(b, kRoPE, op, N/T, []nnArg{
		nnRows(ds, dst, T*rowLen, N*rowLen, true), nnRows(ss, src, T*rowLen, N*rowLen, false), nnWhole(ts, table, (pos0+T)*D),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * T * rowLen / 2) }, func(_, cr int, f firsts) ropePush {
		return ropePush{Rows: uint32(cr * T), T: uint32(T), Pos0: uint32(pos0), H: uint32(H), RotHeads: uint32(rotHeads), D: uint32(D),
			Backward: bw, OffDst: f[0], OffSrc: f[1], OffTab: f[2]}
	})
}

// RoPEForward rotates the first rotHeads heads of each row and copies the rest.
func (b *Backend) RoPEForward(out, inp, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	b.rope("RoPEForward", out, inp, table, N, T, pos0, H, rotHeads, rowLen, false)
}

// RoPEBackward accumulates the gradient through RoPEForward.
func (b *Backend) RoPEBackward(dinp, dout, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	b.rope("RoPEBackward", dinp, dout, table, N, T, pos0, H, rotHeads, rowLen, true)
}

// SwiGLUForward sets out = silu(gate) * up elementwise.
func (b *Backend) SwiGLUForward(out, gate, up *tensor.Tensor, n int) {
	const op = "SwiGLUForward"
	nnDims(op, n)
	os, gs, us := nnF32(b, op, "out", out, n), nnF32(b, op, "gate", gate, n), nnF32(b, op, "up", up, n)
	b.dev.Cost(6*float64(n), 12*float64(n))
	nnRun(b, kSwiGLUForward, op, n, []nnArg{nnRows(os, out, 1, n, true), nnRows(gs, gate, 1, n, false), nnRows(us, up, 1, n, false)},
		b.nnFlatGroups, func(_, cn int, f firsts) swigluForwardPush {
			return swigluForwardPush{N: uint32(cn), OffOut: f[0], OffGate: f[1], OffUp: f[2]}
		})
}

// SwiGLUBackward accumulates the gradients of gate and up.
func (b *Backend) SwiGLUBackward(dgate, dup, gate, up, dout *tensor.Tensor, n int) {
	const op = "SwiGLUBackward"
	nnDims(op, n)
	dgs, dus := nnF32(b, op, "dgate", dgate, n), nnF32(b, op, "dup", dup, n)
	gs, us, os := nnF32(b, op, "gate", gate, n), nnF32(b, op, "up", up, n), nnF32(b, op, "dout", dout, n)
	b.dev.Cost(12*float64(n), 28*float64(n)) // gate, up and dout read; dgate and dup read and written
	nnRun(b, kSwiGLUBackward, op, n, []nnArg{
		nnRows(dgs, dgate, 1, n, true), nnRows(dus, dup, 1, n, true), nnRows(gs, gate, 1, n, false), nnRows(us, up, 1, n, false), nnRows(os, dout, 1, n, false),
	}, b.nnFlatGroups, func(_, cn int, f firsts) swigluBackwardPush {
		return swigluBackwardPush{N: uint32(cn), OffDgate: f[0], OffDup: f[1], OffGate: f[2], OffUp: f[3], OffDout: f[4]}
	})
}

// EmbeddingForward sets out[r] = wte[tokens[r]], a window of the table's rows at a time.
func (b *Backend) EmbeddingForward(out, tokens, wte *tensor.Tensor, N, C int) {
	const op = "EmbeddingForward"
	nnDims(op, N, C)
	if N == 0 {
		return
	}
	V := vocabRows(op, wte, C)
	os, ts, es := nnF32(b, op, "out", out, N*C), nnI32(b, op, "tokens", tokens, N), nnF32(b, op, "wte", wte, V*C)
	b.dev.Cost(0, 4*(2*float64(N*C)+float64(N)))
	b.vocabChunks(op, V, C, func(v0, vn int) {
		nnRun(b, kEmbeddingForward, op, N, []nnArg{
			nnRows(os, out, C, N*C, true), nnRows(ts, tokens, 1, N, false), {buf: es.buf, off: wte.Offset + v0*C, n: vn * C},
		}, b.nnRowGroups, func(_, cr int, f firsts) embeddingForwardPush {
			return embeddingForwardPush{Rows: uint32(cr), C: uint32(C), V0: uint32(v0), Vn: uint32(vn), OffOut: f[0], OffTok: f[1], OffWte: f[2]}
		})
	})
}

// EmbeddingBackward accumulates dout into dwte at each row's token, adding rows in order
// without atomics (EncoderBackward's scatter into its dwte, over N rows).
func (b *Backend) EmbeddingBackward(dwte, dout, tokens *tensor.Tensor, N, C int) {
	const op = "EmbeddingBackward"
	nnDims(op, N, C)
	if N == 0 {
		return
	}
	b.scatterTokenRows(op, dwte, dout, tokens, N, 1, C)
}

var (
	kPackQKV         = Kernel{Shader: "pack_qkv", Bindings: 4, Push: 8}
	kPackQKVBackward = Kernel{Shader: "pack_qkv_backward", Bindings: 4, Push: 8}
)

func packArgs(op string, N, H, KV, D int) {
	nnDims(op, N, H, KV, D)
	if KV == 0 || H%KV != 0 {
		panic(fmt.Sprintf("vk: %s: %d query heads are not a multiple of %d KV heads", op, H, KV))
	}
}

// PackQKV lays out q, k and v for attention, repeating each KV head for its query heads.
func (b *Backend) PackQKV(qkv, q, k, v *tensor.Tensor, N, H, KV, D int) {
	const op = "PackQKV"
	packArgs(op, N, H, KV, D)
	qw, kw := H*D, KV*D
	os, qs := nnF32(b, op, "qkv", qkv, 3*N*qw), nnF32(b, op, "q", q, N*qw)
	ks, vs := nnF32(b, op, "k", k, N*kw), nnF32(b, op, "v", v, N*kw)
	if N*qw == 0 {
		return
	}
	b.dev.Cost(0, 4*(3*float64(N*qw)+float64(N*(qw+2*kw))))
	nnRun(b, kPackQKV, op, N, []nnArg{
		nnRows(os, qkv, 3*qw, 3*N*qw, true), nnRows(qs, q, qw, N*qw, false), nnRows(ks, k, kw, N*kw, false), nnRows(vs, v, kw, N*kw, false),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * 3 * qw) }, func(_, cr int, f firsts) packQKVPush {
		return packQKVPush{Rows: uint32(cr), H: uint32(H), KV: uint32(KV), D: uint32(D), OffQkv: f[0], OffQ: f[1], OffK: f[2], OffV: f[3]}
	})
}

// PackQKVBackward accumulates the packed gradient into dq, dk and dv, each KV head adding its
// copies in head order.
func (b *Backend) PackQKVBackward(dq, dk, dv, dqkv *tensor.Tensor, N, H, KV, D int) {
	const op = "PackQKVBackward"
	packArgs(op, N, H, KV, D)
	qw, kw := H*D, KV*D
	qs, ks, vs := nnF32(b, op, "dq", dq, N*qw), nnF32(b, op, "dk", dk, N*kw), nnF32(b, op, "dv", dv, N*kw)
	gs := nnF32(b, op, "dqkv", dqkv, 3*N*qw)
	if N*qw == 0 {
		return
	}
	b.dev.Cost(3*float64(N*qw), 4*(3*float64(N*qw)+2*float64(N*(qw+2*kw))))
	nnRun(b, kPackQKVBackward, op, N, []nnArg{
		nnRows(qs, dq, qw, N*qw, true), nnRows(ks, dk, kw, N*kw, true), nnRows(vs, dv, kw, N*kw, true), nnRows(gs, dqkv, 3*qw, 3*N*qw, false),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * (qw + 2*kw)) }, func(_, cr int, f firsts) packQKVBackwardPush {
		return packQKVBackwardPush{Rows: uint32(cr), H: uint32(H), KV: uint32(KV), D: uint32(D), OffDq: f[0], OffDk: f[1], OffDv: f[2], OffDqkv: f[3]}
	})
}
