package vk

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

// The fused neural-network ops: layernorm, GELU, attention, embedding, softmax and losses,
// dropout. Each follows the CPU backend (and so llm.c) op for op; the shaders' comments say
// how. Row-wise ops run one workgroup per row with reductions in shared memory in a fixed
// tree, and column sums (layernorm's dweight and dbias, the embedding scatter-add) add rows
// in a fixed order without float atomics, so every result is repeatable bit for bit.
// Arguments larger than one storage-buffer window are processed in chunks of rows
// (sequences for attention and the embedding, vocabulary rows for wte).

var (
	kLayerNormForward  = Kernel{Shader: "layernorm_forward", Bindings: 6, Push: 8}
	kResidualLNForward = Kernel{Shader: "residual_layernorm_forward", Bindings: 8, Push: 10}
	kLayerNormBackward = Kernel{Shader: "layernorm_backward", Bindings: 6, Push: 8}
	kLayerNormPartial  = Kernel{Shader: "layernorm_backward_partial", Bindings: 5, Push: 9}
	kLayerNormColsum   = Kernel{Shader: "layernorm_backward_colsum", Bindings: 3, Push: 5}
	kGeluForward       = Kernel{Shader: "gelu_forward", Bindings: 2, Push: 4}
	kGeluBackward      = Kernel{Shader: "gelu_backward", Bindings: 3, Push: 5}
	kGeluBackwardVec4  = Kernel{Shader: "gelu_backward_vec4", Bindings: 3, Push: 5}
	kEncoderForward    = Kernel{Shader: "encoder_forward", Bindings: 4, Push: 9}
	kEncoderWte        = Kernel{Shader: "encoder_backward_wte", Bindings: 3, Push: 7}
	kEncoderWteVec4    = Kernel{Shader: "encoder_backward_wte_vec4", Bindings: 3, Push: 7}
	kEncoderWpe        = Kernel{Shader: "encoder_backward_wpe", Bindings: 2, Push: 4}
	kCrossEntropyFwd   = Kernel{Shader: "crossentropy_forward", Bindings: 4, Push: 7}
	kCrossEntropyFwd4  = Kernel{Shader: "crossentropy_forward_vec4", Bindings: 4, Push: 7}
	kCrossEntropyBwd   = Kernel{Shader: "crossentropy_backward", Bindings: 4, Push: 7}
	kCrossEntropyFused = Kernel{Shader: "crossentropy_fused", Bindings: 4, Push: 8}
	kCrossEntropyFuse4 = Kernel{Shader: "crossentropy_fused_vec4", Bindings: 4, Push: 8}
	kLogSoftmaxGather  = Kernel{Shader: "logsoftmax_gather", Bindings: 5, Push: 11}
	kLogSoftmaxBwd     = Kernel{Shader: "logsoftmax_gather_backward", Bindings: 6, Push: 12}
	kDropout           = Kernel{Shader: "dropout", Bindings: 3, Push: 8}
)

// geluScaling is llm.c's GELU_SCALING_FACTOR, sqrtf(2.0f / M_PI), as the CPU backend rounds it.
var geluScaling = float32(math.Sqrt(float64(float32(2 / math.Pi))))

// LayerNormForward normalises N rows of C values, one workgroup per row.
func (b *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias *tensor.Tensor, N, C int) {
	b.layerNormRows(kLayerNormForward, "LayerNormForward", "inp", out, mean, rstd, inp, nil, nil, weight, bias, N, C)
}

// ResidualLayerNormForward sets residual = a + b and normalises it, one workgroup per row:
// the residual stream is written in the pass that sums the row, not by a dispatch of its own.
func (b *Backend) ResidualLayerNormForward(residual, out, mean, rstd, x, y, weight, bias *tensor.Tensor, N, C int) {
	b.layerNormRows(kResidualLNForward, "ResidualLayerNormForward", "residual", out, mean, rstd, residual, x, y, weight, bias, N, C)
}

// layerNormRows runs k over N rows of inp (named inpName), or, with x and y set, of
// inp = x + y written as it goes.
func (b *Backend) layerNormRows(k Kernel, op, inpName string, out, mean, rstd, inp, x, y, weight, bias *tensor.Tensor, N, C int) {
	nnDims(op, N, C)
	reads := 2.0
	if x != nil {
		reads = 5
	}
	b.dev.Cost(8*float64(N*C), 4*(reads*float64(N*C)+2*float64(N)))
	os, ms, rs := nnF32(b, op, "out", out, N*C), nnF32(b, op, "mean", mean, N), nnF32(b, op, "rstd", rstd, N)
	is, ws, bs := nnF32(b, op, inpName, inp, N*C), nnF32(b, op, "weight", weight, C), nnF32(b, op, "bias", bias, C)
	args := [8]nnArg{
		nnRows(os, out, C, N*C, true), nnRows(ms, mean, 1, N, true), nnRows(rs, rstd, 1, N, true),
		nnRows(is, inp, C, N*C, x != nil), nnWhole(ws, weight, C), nnWhole(bs, bias, C),
	}
	n := 6
	if x != nil {
		args[6], args[7], n = nnRows(nnF32(b, op, "a", x, N*C), x, C, N*C, false), nnRows(nnF32(b, op, "b", y, N*C), y, C, N*C, false), 8
	}
	if C == 0 {
		return
	}
	k = b.rowKernel(k)
	rows := func(cr int, f firsts) layerNormForwardPush {
		return layerNormForwardPush{Rows: uint32(cr), C: uint32(C), OffOut: f[0], OffMean: f[1], OffRstd: f[2], OffInp: f[3], OffW: f[4], OffB: f[5]}
	}
	if x == nil {
		nnRun(b, k, op, N, args[:n], b.nnRowGroups, func(_, cr int, f firsts) layerNormForwardPush { return rows(cr, f) })
		return
	}
	nnRun(b, k, op, N, args[:n], b.nnRowGroups, func(_, cr int, f firsts) residualLayerNormForwardPush {
		return residualLayerNormForwardPush{layerNormForwardPush: rows(cr, f), OffA: f[6], OffBv: f[7]}
	})
}

// lnBlockRows is the number of consecutive rows whose dweight and dbias terms one invocation
// of layernorm_backward_partial sums: at least 32, and at most 256 blocks in all.
func lnBlockRows(N int) int { return max(32, (N+255)/256) }

// LayerNormBackward accumulates into dinp (row-parallel) and into dweight and dbias (column
// sums: partial sums over fixed blocks of rows, then the blocks in order).
func (b *Backend) LayerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd *tensor.Tensor, N, C int) {
	const op = "LayerNormBackward"
	nnDims(op, N, C)
	dis, dws, dbs := nnF32(b, op, "dinp", dinp, N*C), nnF32(b, op, "dweight", dweight, C), nnF32(b, op, "dbias", dbias, C)
	dos, is, ws := nnF32(b, op, "dout", dout, N*C), nnF32(b, op, "inp", inp, N*C), nnF32(b, op, "weight", weight, C)
	ms, rs := nnF32(b, op, "mean", mean, N), nnF32(b, op, "rstd", rstd, N)
	if N == 0 || C == 0 {
		return
	}
	// dinp: dout and inp read, dinp read and written; the row's two sums and the result.
	b.dev.Cost(12*float64(N*C), 4*(4*float64(N*C)+2*float64(N)))
	nnRun(b, b.rowKernel(kLayerNormBackward), op, N, []nnArg{
		nnRows(dis, dinp, C, N*C, true), nnRows(dos, dout, C, N*C, false), nnRows(is, inp, C, N*C, false),
		nnWhole(ws, weight, C), nnRows(ms, mean, 1, N, false), nnRows(rs, rstd, 1, N, false),
	}, b.nnRowGroups, func(_, cr int, f firsts) layerNormBackwardPush {
		return layerNormBackwardPush{Rows: uint32(cr), C: uint32(C), OffDinp: f[0], OffDout: f[1], OffInp: f[2], OffW: f[3], OffMean: f[4], OffRstd: f[5]}
	})

	rb := lnBlockRows(N)
	blocks := (N + rb - 1) / rb
	part, err := b.scratchFor(blocks * 2 * C)
	if err != nil {
		b.setErr(err)
		return
	}
	// Rows of this pass are blocks of rb rows: dout and inp read, the normalised value's
	// product with dout and dout summed per column.
	b.dev.Cost(5*float64(N*C), 4*(2*float64(N*C)+2*float64(N)+2*float64(blocks*C)))
	nnRun(b, kLayerNormPartial, op, blocks, []nnArg{
		{buf: part, per: 2 * C, n: blocks * 2 * C, write: true},
		nnRows(dos, dout, rb*C, N*C, false), nnRows(is, inp, rb*C, N*C, false),
		nnRows(ms, mean, rb, N, false), nnRows(rs, rstd, rb, N, false),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * C) }, func(r0, cr int, f firsts) layerNormPartialPush {
		return layerNormPartialPush{Rows: uint32(min(cr*rb, N-r0*rb)), Blocks: uint32(cr), Rb: uint32(rb), C: uint32(C),
			OffPart: f[0], OffDout: f[1], OffInp: f[2], OffMean: f[3], OffRstd: f[4]}
	})
	b.dev.Cost(2*float64(blocks*C), 4*(2*float64(blocks*C)+4*float64(C)))
	nnRun(b, kLayerNormColsum, op, 1, []nnArg{
		{buf: dws.buf, off: dweight.Offset, n: C, write: true}, {buf: dbs.buf, off: dbias.Offset, n: C, write: true},
		{buf: part, n: blocks * 2 * C},
	}, func(int) [3]uint32 { return b.nnFlatGroups(C) }, func(_, _ int, f firsts) layerNormColsumPush {
		return layerNormColsumPush{Blocks: uint32(blocks), C: uint32(C), OffDw: f[0], OffDb: f[1], OffPart: f[2]}
	})
}

// GeluForward applies GELU (tanh approximation) elementwise.
func (b *Backend) GeluForward(out, inp *tensor.Tensor) {
	const op = "GeluForward"
	n := out.Numel()
	b.dev.Cost(12*float64(n), 8*float64(n))
	os, is := nnF32(b, op, "out", out, n), nnF32(b, op, "inp", inp, n)
	b.geluForward(nnRows(os, out, 1, n, true), nnRows(is, inp, 1, n, false), n)
}

// geluForward records gelu_forward over n elements of inp into out.
func (b *Backend) geluForward(out, inp nnArg, n int) {
	nnRun(b, kGeluForward, "GeluForward", n, []nnArg{out, inp}, b.nnFlatGroups,
		func(_, cn int, f firsts) geluForwardPush {
			return geluForwardPush{N: uint32(cn), OffOut: f[0], OffInp: f[1], Scaling: geluScaling}
		})
}

// GeluBackward accumulates dinp += gelu'(inp) * dout.
func (b *Backend) GeluBackward(dinp, inp, dout *tensor.Tensor) {
	const op = "GeluBackward"
	n := dinp.Numel()
	ds, is, os := nnF32(b, op, "dinp", dinp, n), nnF32(b, op, "inp", inp, n), nnF32(b, op, "dout", dout, n)
	args := []nnArg{nnRows(ds, dinp, 1, n, true), nnRows(is, inp, 1, n, false), nnRows(os, dout, 1, n, false)}
	b.dev.Cost(18*float64(n), 16*float64(n)) // dinp is read and written
	// vec4s: a quarter of the loads and stores.
	k, per := elemWidth(kGeluBackward, kGeluBackwardVec4, n, args)
	u := uint32(per)
	nnRun(b, k, op, n/per, args, b.nnFlatGroups, func(_, cn int, f firsts) geluBackwardPush {
		return geluBackwardPush{N: uint32(cn), OffDinp: f[0] / u, OffInp: f[1] / u, OffDout: f[2] / u, Scaling: geluScaling}
	})
}

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

func checkVocab(op string, V, Vp int) {
	if V < 1 || V > Vp {
		panic(fmt.Sprintf("vk: %s: V=%d must be in [1, Vp=%d]", op, V, Vp))
	}
}

// CrossEntropyForward computes the softmax of each row's first V logits into probs and the
// loss at the target, one workgroup per row.
func (b *Backend) CrossEntropyForward(losses, probs, logits, targets *tensor.Tensor, N, V, Vp int) {
	crossEntropyRows(b, kCrossEntropyFwd, kCrossEntropyFwd4, "CrossEntropyForward", "probs", 4, losses, probs, logits, targets, N, V, Vp,
		func(p crossEntropyForwardPush) crossEntropyForwardPush { return p })
}

// CrossEntropyFused computes each row's loss and writes its gradient for a loss gradient of
// dloss into dlogits, one workgroup per row and no probabilities in memory.
func (b *Backend) CrossEntropyFused(losses, dlogits, logits, targets *tensor.Tensor, N, V, Vp int, dloss float32) {
	crossEntropyRows(b, kCrossEntropyFused, kCrossEntropyFuse4, "CrossEntropyFused", "dlogits", 5, losses, dlogits, logits, targets, N, V, Vp,
		func(p crossEntropyForwardPush) crossEntropyFusedPush { return crossEntropyFusedPush{p, dloss} })
}

// crossEntropyRows runs k, the forward or the fused kernel, over N rows: the losses and out (the
// probabilities, or the gradient), flops a column; push extends the forward's push constants
// to k's. Where every row of logits and out starts on a vec4 it runs k4, k's twin with vec4
// loads and stores (the same bits; on lavapipe the fused loss takes about half the time).
func crossEntropyRows[P any](b *Backend, k, k4 Kernel, op, outName string, flops float64, losses, out, logits, targets *tensor.Tensor, N, V, Vp int, push func(crossEntropyForwardPush) P) {
	b.dev.Cost(flops*float64(N*V), 4*2*float64(N*Vp))
	nnDims(op, N)
	checkVocab(op, V, Vp)
	ls, os := nnF32(b, op, "losses", losses, N), nnF32(b, op, outName, out, N*Vp)
	gs, ts := nnF32(b, op, "logits", logits, N*Vp), nnI32(b, op, "targets", targets, N)
	args := []nnArg{
		nnRows(ls, losses, 1, N, true), nnRows(os, out, Vp, N*Vp, true),
		nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false),
	}
	if Vp%4 == 0 && vec4Aligned(args[1:3]) {
		k = k4
	}
	nnRun(b, b.rowKernel(k), op, N, args, b.nnRowGroups, func(_, cr int, f firsts) P {
		return push(crossEntropyForwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), OffLosses: f[0], OffProbs: f[1], OffLogits: f[2], OffTg: f[3]})
	})
}

// CrossEntropyBackward accumulates the loss gradient into the first V columns of dlogits.
func (b *Backend) CrossEntropyBackward(dlogits, probs, targets, dlosses *tensor.Tensor, N, V, Vp int) {
	b.dev.Cost(2*float64(N*V), 4*3*float64(N*Vp))
	const op = "CrossEntropyBackward"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	ds, ps := nnF32(b, op, "dlogits", dlogits, N*Vp), nnF32(b, op, "probs", probs, N*Vp)
	ts, ls := nnI32(b, op, "targets", targets, N), nnF32(b, op, "dlosses", dlosses, N)
	nnRun(b, b.rowKernel(kCrossEntropyBwd), op, N, []nnArg{
		nnRows(ds, dlogits, Vp, N*Vp, true), nnRows(ps, probs, Vp, N*Vp, false),
		nnRows(ts, targets, 1, N, false), nnRows(ls, dlosses, 1, N, false),
	}, b.nnRowGroups, func(_, cr int, f firsts) crossEntropyBackwardPush {
		return crossEntropyBackwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), OffD: f[0], OffProbs: f[1], OffTg: f[2], OffDl: f[3]}
	})
}

func invTemperature(op string, temperature float32) float32 {
	if !(temperature > 0) || math.IsInf(float64(temperature), 0) {
		panic(fmt.Sprintf("vk: %s: temperature %v, want a positive finite value", op, temperature))
	}
	return float32(1 / float64(temperature))
}

// lsgCutoff binds the per-row cutoff of a truncated LogSoftmaxGather, or stand (never read)
// with has_cut 0 when cutoff is nil.
func (b *Backend) lsgCutoff(op string, cutoff *tensor.Tensor, N int, stand nnArg) (nnArg, uint32) {
	if cutoff == nil {
		return stand, 0
	}
	return nnRows(nnF32(b, op, "cutoff", cutoff, N), cutoff, 1, N, false), 1
}

// LogSoftmaxGather computes log-probabilities at the targets at a temperature, and the
// entropy when entropy is not nil, one workgroup per row with float32 sums. With cutoff each
// row's softmax runs over the columns whose logit is at least its cutoff, and the target.
func (b *Backend) LogSoftmaxGather(logp, entropy, logits, targets, cutoff *tensor.Tensor, N, V, Vp int, temperature float32) {
	const op = "LogSoftmaxGather"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	invT := invTemperature(op, temperature)
	lps := nnF32(b, op, "logp", logp, N)
	gs, ts := nnF32(b, op, "logits", logits, N*Vp), nnI32(b, op, "targets", targets, N)
	ent, hasEnt := nnRows(lps, logp, 1, N, false), uint32(0) // logp stands in, never written
	if entropy != nil {
		ent, hasEnt = nnRows(nnF32(b, op, "entropy", entropy, N), entropy, 1, N, true), 1
	}
	cut, hasCut := b.lsgCutoff(op, cutoff, N, nnRows(ts, targets, 1, N, false)) // targets stand in
	b.dev.Cost(float64(4+2*hasEnt)*float64(N*V), 4*float64(N*Vp))
	nnRun(b, b.rowKernel(kLogSoftmaxGather), op, N, []nnArg{
		nnRows(lps, logp, 1, N, true), ent, nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false), cut,
	}, b.nnRowGroups, func(_, cr int, f firsts) logSoftmaxGatherPush {
		return logSoftmaxGatherPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), HasEnt: hasEnt, InvT: invT, HasCut: hasCut,
			OffLogp: f[0], OffEnt: f[1], OffLogits: f[2], OffTg: f[3], OffCut: f[4]}
	})
}

// LogSoftmaxGatherBackward accumulates the gradient of the gathered log-probabilities (and of
// the entropy when dentropy is not nil) into the first V columns of dlogits, under the
// distribution LogSoftmaxGather computed (truncated by cutoff when it is not nil).
func (b *Backend) LogSoftmaxGatherBackward(dlogits, logits, targets, cutoff, dlogp, dentropy *tensor.Tensor, N, V, Vp int, temperature float32) {
	const op = "LogSoftmaxGatherBackward"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	invT := invTemperature(op, temperature)
	ds, gs := nnF32(b, op, "dlogits", dlogits, N*Vp), nnF32(b, op, "logits", logits, N*Vp)
	ts, lps := nnI32(b, op, "targets", targets, N), nnF32(b, op, "dlogp", dlogp, N)
	dent, hasEnt := nnRows(lps, dlogp, 1, N, false), uint32(0) // dlogp stands in, never read
	if dentropy != nil {
		dent, hasEnt = nnRows(nnF32(b, op, "dentropy", dentropy, N), dentropy, 1, N, false), 1
	}
	cut, hasCut := b.lsgCutoff(op, cutoff, N, nnRows(lps, dlogp, 1, N, false)) // dlogp stands in
	b.dev.Cost(float64(6+3*hasEnt)*float64(N*V), 4*3*float64(N*Vp))            // logits read, dlogits read and written
	nnRun(b, b.rowKernel(kLogSoftmaxBwd), op, N, []nnArg{
		nnRows(ds, dlogits, Vp, N*Vp, true), nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false),
		nnRows(lps, dlogp, 1, N, false), dent, cut,
	}, b.nnRowGroups, func(_, cr int, f firsts) logSoftmaxGatherBackwardPush {
		return logSoftmaxGatherBackwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), HasEnt: hasEnt, InvT: invT, HasCut: hasCut,
			OffD: f[0], OffLogits: f[1], OffTg: f[2], OffDlogp: f[3], OffDent: f[4], OffCut: f[5]}
	})
}

// Dropout sets mask from tensor.DropoutScale's hash of (seed, element index) and out = inp *
// mask. The seed's key and 1/(1-p) are computed here in float32 as DropoutScale does, so the
// masks are the same bits; the shader hashes the element indices.
func (b *Backend) Dropout(out, mask, inp *tensor.Tensor, p float32, seed uint64) {
	const op = "Dropout"
	n := out.Numel()
	os, ms, is := nnF32(b, op, "out", out, n), nnF32(b, op, "mask", mask, n), nnF32(b, op, "inp", inp, n)
	key := tensor.Hash32(uint32(seed) ^ tensor.Hash32(uint32(seed>>32)))
	keep := 1 / (1 - p)
	b.dev.Cost(float64(n), 12*float64(n))
	nnRun(b, kDropout, op, n, []nnArg{
		nnRows(os, out, 1, n, true), nnRows(ms, mask, 1, n, true), nnRows(is, inp, 1, n, false),
	}, b.nnFlatGroups, func(r0, cr int, f firsts) dropoutPush {
		return dropoutPush{N: uint32(cr), Base: uint32(r0), Key: key, Prob: p, Keep: keep, OffOut: f[0], OffMask: f[1], OffInp: f[2]}
	})
}
