package vk

import "github.com/vkgrad/vkgrad/tensor"

// LayerNorm (GPT-2) and RMSNorm (Llama), one workgroup per row.

var (
	kLayerNormForward      = Kernel{Shader: "layernorm_forward", Bindings: 6, Push: 8}
	kResidualLNForward     = Kernel{Shader: "residual_layernorm_forward", Bindings: 8, Push: 10}
	kLayerNormBackward     = Kernel{Shader: "layernorm_backward", Bindings: 6, Push: 8}
	kLayerNormPartial      = Kernel{Shader: "layernorm_backward_partial", Bindings: 5, Push: 9}
	kLayerNormColsum       = Kernel{Shader: "layernorm_backward_colsum", Bindings: 3, Push: 5}
	kRMSNormForward        = Kernel{Shader: "rmsnorm_forward", Bindings: 4, Push: 7}
	kResidualRMSNorm       = Kernel{Shader: "residual_rmsnorm_forward", Bindings: 6, Push: 9}
	kRMSNormBackward       = Kernel{Shader: "rmsnorm_backward", Bindings: 5, Push: 7}
	kRMSNormBackwardWeight = Kernel{Shader: "rmsnorm_backward_weight", Bindings: 4, Push: 6}
)

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
		nnWholeWritten(dws, dweight, C), nnRows(dos, dout, C, N*C, false), nnRows(is, inp, C, N*C, false), nnRows(rs, rstd, 1, N, false),
	}, func(int) [3]uint32 { return b.nnFlatGroups(C) }, func(_, cr int, f firsts) rmsNormBackwardWeightPush {
		return rmsNormBackwardWeightPush{Rows: uint32(cr), C: uint32(C), OffDw: f[0], OffDout: f[1], OffInp: f[2], OffRstd: f[3]}
	})
}
