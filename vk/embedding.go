package vk

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Token embeddings: GPT-2's encoder (token plus position rows) and Llama's token rows alone.

var (
	kEncoderForward   = Kernel{Shader: "encoder_forward", Bindings: 4, Push: 9}
	kEncoderWte       = Kernel{Shader: "encoder_backward_wte", Bindings: 3, Push: 7}
	kEncoderWteVec4   = Kernel{Shader: "encoder_backward_wte_vec4", Bindings: 3, Push: 7}
	kEncoderWpe       = Kernel{Shader: "encoder_backward_wpe", Bindings: 2, Push: 4}
	kEmbeddingForward = Kernel{Shader: "embedding_forward", Bindings: 3, Push: 7}
)

// vocabRows is the number of rows of C in an embedding table.
func vocabRows(op string, t *tensor.Tensor, C int) int {
	if C == 0 {
		panic(fmt.Sprintf("vk: %s: C is 0", op))
	}
	return t.Numel() / C
}

// vocabChunks calls f for consecutive ranges of at most one window's rows of a (V, C) table.
func (b *Backend) vocabChunks(op string, V, C int, f func(v0, vn int)) {
	per := b.maxChunk / C
	if per == 0 {
		b.setErr(fmt.Errorf("vk: %s: an embedding row of %d elements exceeds a storage-buffer window of %d", op, C, b.maxChunk))
		return
	}
	for v0 := 0; v0 < V; v0 += per {
		f(v0, min(per, V-v0))
	}
}

// EncoderForward sets out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]. Token ids outside the table
// leave their rows of out untouched (the callers validate them).
func (b *Backend) EncoderForward(out, tokens, wte, wpe *tensor.Tensor, B, T, C int) {
	const op = "EncoderForward"
	nnDims(op, B, T, C)
	if B*T == 0 {
		return
	}
	V := vocabRows(op, wte, C)
	os, ts := nnF32(b, op, "out", out, B*T*C), nnI32(b, op, "tokens", tokens, B*T)
	es, ps := nnF32(b, op, "wte", wte, V*C), nnF32(b, op, "wpe", wpe, T*C)
	b.dev.Cost(float64(B*T*C), 4*(3*float64(B*T*C)+float64(B*T)))
	b.vocabChunks(op, V, C, func(v0, vn int) {
		nnRun(b, kEncoderForward, op, B, []nnArg{
			nnRows(os, out, T*C, B*T*C, true), nnRows(ts, tokens, T, B*T, false),
			{buf: es.buf, off: wte.Offset + v0*C, n: vn * C}, nnWhole(ps, wpe, T*C),
		}, func(cr int) [3]uint32 { return b.nnRowGroups(cr * T) }, func(_, cr int, f firsts) encoderForwardPush {
			return encoderForwardPush{Rows: uint32(cr * T), T: uint32(T), C: uint32(C), V0: uint32(v0), Vn: uint32(vn),
				OffOut: f[0], OffTok: f[1], OffWte: f[2], OffWpe: f[3]}
		})
	})
}

// EncoderBackward accumulates dout into dwte at each position's token and into dwpe at its
// position. Both add positions in order, as the CPU backend does, so the sums are the same
// bits; dwte without atomics (see encoder_backward_wte.glsl), a window of its rows at a time.
func (b *Backend) EncoderBackward(dwte, dwpe, dout, tokens *tensor.Tensor, B, T, C int) {
	const op = "EncoderBackward"
	nnDims(op, B, T, C)
	if B*T == 0 {
		return
	}
	ps, os := nnF32(b, op, "dwpe", dwpe, T*C), nnF32(b, op, "dout", dout, B*T*C)
	b.scatterTokenRows(op, dwte, dout, tokens, B, T, C)
	b.dev.Cost(float64(B*T*C), 4*(float64(B*T*C)+2*float64(T*C)))
	nnRun(b, kEncoderWpe, op, B, []nnArg{
		{buf: ps.buf, off: dwpe.Offset, n: T * C, write: true}, nnRows(os, dout, T*C, B*T*C, false),
	}, func(int) [3]uint32 { return b.nnFlatGroups(T * C) }, func(_, cr int, f firsts) encoderWpePush {
		return encoderWpePush{N: uint32(T * C), B: uint32(cr), OffDwpe: f[0], OffDout: f[1]}
	})
}

// scatterTokenRows accumulates each of the B*T rows of dout (B sequences of T) into dwte at
// its token, adding rows in order without atomics (see encoder_backward_wte.glsl), a window of
// dwte's rows at a time.
func (b *Backend) scatterTokenRows(op string, dwte, dout, tokens *tensor.Tensor, B, T, C int) {
	V := vocabRows(op, dwte, C)
	es, os, ts := nnF32(b, op, "dwte", dwte, V*C), nnF32(b, op, "dout", dout, B*T*C), nnI32(b, op, "tokens", tokens, B*T)
	// dout read, each position's row of dwte read and written, the tokens.
	b.dev.Cost(float64(B*T*C), 4*(3*float64(B*T*C)+float64(B*T)))
	b.vocabChunks(op, V, C, func(v0, vn int) {
		args := []nnArg{
			{buf: es.buf, off: dwte.Offset + v0*C, n: vn * C, write: true},
			nnRows(ts, tokens, T, B*T, false), nnRows(os, dout, T*C, B*T*C, false),
		}
		// Four columns per invocation where both float operands start on a vec4: a quarter
		// of the workgroups, each of which scans every token.
		k, cw := kEncoderWte, 1
		if C%4 == 0 && vec4Aligned([]nnArg{args[0], args[2]}) {
			k, cw = kEncoderWteVec4, 4
		}
		k.Local = [3]uint32{wteWorkgroup(C/cw, b.wg), 1, 1}
		colGroups := uint32((C/cw + int(k.Local[0]) - 1) / int(k.Local[0]))
		nnRun(b, k, op, B, args, func(cr int) [3]uint32 {
			return [3]uint32{colGroups, uint32(min(cr*T, int(b.maxGroups))), 1}
		}, func(_, cr int, f firsts) encoderWtePush {
			return encoderWtePush{Rows: uint32(cr * T), C: uint32(C / cw), V0: uint32(v0), Vn: uint32(vn),
				OffDwte: f[0] / uint32(cw), OffTok: f[1], OffDout: f[2] / uint32(cw)}
		})
	})
}

// wteWorkgroup is the workgroup size of encoder_backward_wte for rows of cols columns: the
// least power of two that covers them, from 8 to wg: lanes past the row's end have nothing to
// add, and with the default workgroup most of a gpt2-mini row's lanes would be such.
func wteWorkgroup(cols int, wg uint32) uint32 {
	w := uint32(8)
	for w < wg && int(w) < cols {
		w *= 2
	}
	return min(w, wg)
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
