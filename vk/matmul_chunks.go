package vk

import "github.com/vkgrad/vkgrad/tensor"

// mmChunks is how a product is cut into dispatches: chunks of at most mc x nc x kc, bg
// batches at a time, and, for one dispatch of whole products on the tiled kernel, splits
// parts of ksplit along K (see mmSplitK).
type mmChunks struct {
	mc, nc, kc     int
	bg             int
	splits, ksplit int
}

// mmChunk is one dispatch's share of a product: zn batches from z0, rows [m0, m0+mn),
// columns [n0, n0+nn) and depth [k0, k0+kn).
type mmChunk struct{ z0, zn, m0, mn, n0, nn, k0, kn int }

// mmChunking plans the chunks of a product on kernel k.
func (b *Backend) mmChunking(p tensor.MatMulParams, k mmKernel) mmChunks {
	maxM, maxN := b.mmMaxExtents(k)
	c := mmChunks{bg: 1, splits: 1}
	c.mc, c.nc, c.kc = mmPlan(p, b.maxChunk, k.tile.BM, k.tile.BN, maxM, maxN)
	if c.mc != p.M || c.nc != p.N || c.kc != max(p.K, 1) {
		return c
	}
	c.bg = b.mmWholeBatches(p)
	if k.tiled() && c.bg == max(p.Batch, 1) {
		c.splits, c.ksplit = b.mmSplitPlan(p, k.tile)
	}
	return c
}

// mmMaxExtents are the most rows and columns one dispatch covers within the device's
// workgroup counts.
func (b *Backend) mmMaxExtents(k mmKernel) (maxM, maxN int) {
	maxG := b.dev.Info.MaxComputeWorkGroupCount
	if k.rowsInX {
		return int(maxG[0]) * k.tile.BM, int(maxG[1]) * k.tile.BN
	}
	return int(maxG[1]) * k.tile.BM, int(maxG[0]) * k.tile.BN
}

// mmWholeBatches is how many whole products go in one dispatch, one batch per z: as many as
// fit a window together, halving from all of them.
func (b *Backend) mmWholeBatches(p tensor.MatMulParams) int {
	M, N, K, lim := p.M, p.N, p.K, b.maxChunk
	s := mmSpan(p, M, N, max(K, 1))
	bg := max(p.Batch, 1)
	for bg > 1 && ((bg-1)*M*K+s.a > lim || (bg-1)*K*N+s.b > lim || (bg-1)*M*N+s.out > lim) {
		bg = max(1, bg/2)
	}
	return min(bg, int(b.dev.Info.MaxComputeWorkGroupCount[2]))
}

// mmSplitPlan is the split-K plan of a whole batch of products in one dispatch, or no split
// where the partials would not fit the grid's z or one window.
func (b *Backend) mmSplitPlan(p tensor.MatMulParams, t mmTile) (splits, ksplit int) {
	batch := max(p.Batch, 1)
	splits, ksplit = b.mmSplits(t, p.M, p.N, p.K, batch)
	if batch*splits > int(b.dev.Info.MaxComputeWorkGroupCount[2]) || batch*p.M*p.N*splits > b.maxChunk {
		splits = 1
	}
	return splits, ksplit
}

// mmDispatchChunks records the product chunk by chunk, each K pass after the one before.
func (b *Backend) mmDispatchChunks(p tensor.MatMulParams, ops mmOperands, k mmKernel, plan mmChunks) {
	batch := max(p.Batch, 1)
	for z0 := 0; z0 < batch; z0 += plan.bg {
		for m0 := 0; m0 < p.M; m0 += plan.mc {
			for n0 := 0; n0 < p.N; n0 += plan.nc {
				for k0 := 0; k0 == 0 || k0 < p.K; k0 += plan.kc {
					c := mmChunk{
						z0: z0, zn: min(plan.bg, batch-z0), m0: m0, mn: min(plan.mc, p.M-m0),
						n0: n0, nn: min(plan.nc, p.N-n0), k0: k0, kn: min(plan.kc, p.K-k0),
					}
					if !b.mmDispatchChunk(p, ops, k, plan, c) {
						return
					}
				}
			}
		}
	}
}

// mmDispatchChunk records chunk c, through split-K where the plan has it. It reports false
// after recording an error.
func (b *Backend) mmDispatchChunk(p tensor.MatMulParams, ops mmOperands, k mmKernel, plan mmChunks, c mmChunk) bool {
	args, ok := b.mmChunkWindows(p, ops, c)
	if !ok {
		return false
	}
	last := c.k0+plan.kc >= p.K
	push := mmChunkPush(p, c, args, mmChunkFlags(p, k.rowsInX, ops.bias != nil, ops.gelu != nil, c.k0 == 0, last))
	kd, groups := k.forChunk(b.dev.Info, p, c, args), k.groups(c)
	if plan.splits > 1 {
		return b.mmSplitK(kd, groups, push, args, plan.splits, plan.ksplit, c.zn*p.M*p.N)
	}
	words := pushOf(&push.matmulPush) // matmul, matmul_direct, matmul_broadcast
	if k.tiled() {
		words = pushOf(&push)
	}
	if err := b.dev.Dispatch(kd, groups, words, args[:]...); err != nil {
		b.setErr(err)
		return false
	}
	return true
}

// mmChunkWindows binds chunk c's out, a, b, bias and GELU output, in the shader's binding order.
func (b *Backend) mmChunkWindows(p tensor.MatMulParams, ops mmOperands, c mmChunk) ([5]Arg, bool) {
	M, N, K := p.M, p.N, p.K
	s := mmSpan(p, c.mn, c.nn, max(c.kn, 1))
	var args [5]Arg
	wo, ok := b.mmWindow(ops.out, ops.offOut+c.z0*M*N+c.m0*N+c.n0, (c.zn-1)*M*N+s.out)
	if !ok {
		return args, false
	}
	wa, wb := wo, wo // nothing is read when K is 0: bind out in their place
	if K != 0 {
		aoff, boff := mmChunkOffsets(p, c)
		if wa, ok = b.mmWindow(ops.a, ops.offA+c.z0*M*K+aoff, (c.zn-1)*M*K+s.a); !ok {
			return args, false
		}
		if wb, ok = b.mmWindow(ops.b, ops.offB+c.z0*K*N+boff, (c.zn-1)*K*N+s.b); !ok {
			return args, false
		}
	}
	wbias := wa // unused by the shader when there is no bias
	if ops.bias != nil {
		if wbias, ok = b.mmWindow(ops.bias, ops.offBias+c.n0, c.nn); !ok {
			return args, false
		}
	}
	// GELU's output lies as out does; without one, out's window stands in, unused.
	gelu := Arg{W: wo, Unused: true}
	if ops.gelu != nil {
		wg, ok := b.mmWindow(ops.gelu, ops.offGelu+c.z0*M*N+c.m0*N+c.n0, (c.zn-1)*M*N+s.out)
		if !ok {
			return args, false
		}
		gelu = Arg{W: wg, Write: true}
	}
	args[0] = Arg{W: wo, Write: true}
	args[1], args[2], args[3], args[4] = Arg{W: wa}, Arg{W: wb}, Arg{W: wbias}, gelu
	return args, true
}

// mmWindow binds count elements of st from elem, recording the error where it cannot.
func (b *Backend) mmWindow(st *storage, elem, count int) (Window, bool) {
	w, err := b.dev.Window(st.buf, elem, count)
	if err != nil {
		b.setErr(err)
		return Window{}, false
	}
	return w, true
}

// mmChunkOffsets are where chunk c's first elements of a and b lie within one matrix of each.
func mmChunkOffsets(p tensor.MatMulParams, c mmChunk) (aoff, boff int) {
	aoff, boff = c.m0*p.K+c.k0, c.k0*p.N+c.n0
	if p.TransA {
		aoff = c.k0*p.M + c.m0
	}
	if p.TransB {
		boff = c.n0*p.K + c.k0
	}
	return aoff, boff
}

// mmChunkFlags are the shader's flags for a chunk: the first K pass starts from the bias (or
// zero) unless the product accumulates, later ones add to out, and an accumulating product
// adds its bias after the last, which also stores GELU of the finished sums.
func mmChunkFlags(p tensor.MatMulParams, rowsInX, hasBias, hasGelu, first, last bool) uint32 {
	f := mmTransFlags(p)
	if rowsInX {
		f |= mmRowsInX
	}
	switch {
	case !first || p.Accumulate:
		f |= mmLoadOut
	case hasBias:
		f |= mmBiasInit
	}
	if last && p.Accumulate && hasBias {
		f |= mmBiasEnd
	}
	if last && hasGelu {
		f |= mmGelu
	}
	return f
}

// mmChunkPush is the push block of chunk c bound to args; the tiled kernel's split fields
// describe one split of the whole depth.
func mmChunkPush(p tensor.MatMulParams, c mmChunk, args [5]Arg, flags uint32) matmulTiledPush {
	lda, ldb := mmLeading(p)
	return matmulTiledPush{matmulPush: matmulPush{
		M: uint32(c.mn), N: uint32(c.nn), K: uint32(max(c.kn, 0)), Lda: uint32(lda), Ldb: uint32(ldb), Ldo: uint32(p.N),
		OffOut: args[0].W.First, OffA: args[1].W.First, OffB: args[2].W.First, OffBias: args[3].W.First,
		StrideOut: uint32(p.M * p.N), StrideA: uint32(p.M * p.K), StrideB: uint32(p.K * p.N), Flags: flags,
		OffGelu: args[4].W.First, Scaling: geluScaling,
	}, Splits: 1, Ksplit: uint32(max(c.kn, 0))}
}
