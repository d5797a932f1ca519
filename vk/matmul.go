package vk

import (
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/tensor"
)

// Matrix products, bias gradients and the optimizer step.

// The matmul shader's register block and K step (TM, TN, BK in shaders/matmul.comp); its tile is
// (WY*mmTM) x (WX*mmTN) for a workgroup of WX x WY invocations.
const (
	mmTM  = 8
	mmTN  = 8
	mmBK  = 8
	mmPad = 4
)

// matmul flags (shaders/matmul.comp).
const (
	mmTransA   = 1
	mmTransB   = 2
	mmBiasInit = 4
	mmLoadOut  = 8
	mmBiasEnd  = 16
	mmRowsInX  = 32 // matmul_broadcast: row tiles along the workgroup grid's x
	mmGelu     = 64 // also store GELU of each output (MatMulParams.GeluOut)
)

// The rounding of matmul_tiled_round's operands (its specialization constant ROUND_MODE).
const (
	mmRoundBf16 = 1
	mmRoundF16  = 2
)

// mmMaxK bounds the depth one dispatch sums over; deeper products add to out in passes. Mesa's
// lavapipe silently ends the loops of an invocation after 65535 iterations in all (about 10
// per step of BK here), and on GPUs it bounds how long one dispatch can run before a driver's
// watchdog resets the device.
const mmMaxK = 16384

// mmSmallTiles is the number of large tiles below which a product uses the small tile: few
// workgroups would leave most of a GPU idle.
const mmSmallTiles = 96

// mmForceShader, when set by tests, replaces the kernel chosen for the device.
var mmForceShader string

// mmForceLocal, when set by tests, replaces the workgroup shape chosen from the device limits.
var mmForceLocal [2]uint32

// mmSharedBytes is the shared memory the matmul shader declares for a WX x WY workgroup.
func mmSharedBytes(wx, wy uint32) uint32 {
	return 2 * mmBK * (wy*mmTM + mmPad + wx*mmTN + mmPad) * 4
}

// mmLocal chooses the workgroup shape for an M x N product of batch matrices: 16x16 (128x128
// tiles) where the device has the invocations and shared memory, else 16x8, else 8x8; 8x8
// (64x64 tiles) too when the large tiles would be few.
func (b *Backend) mmLocal(M, N, batch int) [2]uint32 {
	if mmForceLocal != ([2]uint32{}) {
		return mmForceLocal
	}
	info := &b.dev.Info
	fits := func(wx, wy uint32) bool {
		return wx*wy <= info.MaxComputeWorkGroupInvocations && wx <= info.MaxComputeWorkGroupSize[0] &&
			wy <= info.MaxComputeWorkGroupSize[1] && mmSharedBytes(wx, wy) <= info.MaxComputeSharedMemorySize
	}
	for _, l := range [][2]uint32{{16, 16}, {16, 8}} {
		if !fits(l[0], l[1]) {
			continue
		}
		tiles := mmCeilDiv(M, int(l[1])*mmTM) * mmCeilDiv(N, int(l[0])*mmTN) * batch
		if tiles >= mmSmallTiles {
			return l
		}
		break
	}
	return [2]uint32{8, 8}
}

func mmCeilDiv(a, b int) int { return (a + b - 1) / b }

// mmShader picks the product's kernel: the cooperative-matrix one where SetCoopMatMul turned
// it on, else the register-tiled one on GPUs (and wherever a tile is set through
// VKGRAD_MATMUL_TILE); on a CPU implementation, where barriers are dear, caches
// already stage and every gathered operand costs many instructions, the broadcast kernel, or
// operands read directly where the device lacks subgroup shuffles (and where tests force a
// workgroup shape). VKGRAD_MATMUL_KERNEL=matmul_coopmat|matmul_coopmat_khr|matmul_tiled|matmul|
// matmul_direct|matmul_broadcast overrides, to compare them (matmul is the earlier fixed-tile
// staged kernel; matmul_coopmat is the device's cooperative-matrix kernel, NV or KHR,
// matmul_coopmat_khr the KHR one; they and matmul_broadcast are taken only where the device
// can run them). In bf16 and fp16 the rounding kernels alone are candidates (mmRoundingShader).
func (b *Backend) mmShader() string {
	if b.precision != tensor.FP32 {
		return b.mmRoundingShader()
	}
	if mmForceShader != "" {
		return mmForceShader
	}
	switch v := os.Getenv("VKGRAD_MATMUL_KERNEL"); v {
	case "matmul", "matmul_direct", "matmul_tiled":
		return v
	case "matmul_broadcast":
		if mmBroadcastFits(b.dev.Info) {
			return v
		}
	case mmCoopMatKernel, mmCoopMatKHRKernel:
		if b.dev.coopMat != nil {
			return b.coopMatShader()
		}
	}
	if b.coopMatOn && os.Getenv(mmTileEnv) == "" && mmForceTile == (mmTile{}) {
		return b.coopMatShader()
	}

	if b.dev.Info.Type == DeviceCPU && os.Getenv(mmTileEnv) == "" && mmForceTile == (mmTile{}) {
		if mmBroadcastFits(b.dev.Info) && mmForceLocal == ([2]uint32{}) {
			return "matmul_broadcast"
		}
		return "matmul_direct"
	}
	return "matmul_tiled"
}

// mmRoundingShader picks the product's kernel in bf16 or fp16, where only two kernels round
// their operands: the cooperative-matrix one (float16 only), unless VKGRAD_MATMUL_KERNEL or a
// tile setting asks for matmul_tiled, and matmul_tiled.
func (b *Backend) mmRoundingShader() string {
	tiled := os.Getenv("VKGRAD_MATMUL_KERNEL") == "matmul_tiled" || os.Getenv(mmTileEnv) != "" || mmForceTile != (mmTile{}) || mmForceShader == "matmul_tiled"
	if b.coopMatOn && !tiled {
		return b.coopMatShader()
	}
	return "matmul_tiled"
}

// coopMatShader is mmShader's name for the cooperative-matrix kernel: mmCoopMatKHRKernel where
// VKGRAD_MATMUL_KERNEL forces that one and the device runs it, else mmCoopMatKernel.
func (b *Backend) coopMatShader() string {
	if os.Getenv("VKGRAD_MATMUL_KERNEL") == mmCoopMatKHRKernel && b.dev.coopMatKHR != nil {
		return mmCoopMatKHRKernel
	}
	return mmCoopMatKernel
}

// mmSpans are the window lengths, in elements, of one chunk of a product: rows [m0, m0+mc),
// columns [n0, n0+nc) and depth [k0, k0+kc) touch a contiguous range of each operand whose
// length depends only on the chunk's sizes and the matrices' row lengths.
type mmSpans struct{ a, b, out, bias int }

func mmSpan(p tensor.MatMulParams, mc, nc, kc int) mmSpans {
	M, N, K := p.M, p.N, p.K
	var s mmSpans
	if p.TransA { // stored (K, M)
		s.a = (kc-1)*M + mc
	} else {
		s.a = (mc-1)*K + kc
	}
	if p.TransB { // stored (N, K)
		s.b = (nc-1)*K + kc
	} else {
		s.b = (kc-1)*N + nc
	}
	s.out = (mc-1)*N + nc
	s.bias = nc
	return s
}

// mmPlan splits an M x N x K product into chunks of at most mc x nc x kc whose operands each
// fit a window of limit elements: each step shrinks the outer (strided) dimension of an
// operand that does not fit, or its inner one when the outer is already 1. It splits K only
// beyond mmMaxK or where one row or column of an operand exceeds a window. The tile sizes
// round the chunks down to whole tiles.
func mmPlan(p tensor.MatMulParams, limit, bm, bn, maxM, maxN int) (mc, nc, kc int) {
	mc, nc, kc = min(p.M, maxM), min(p.N, maxN), min(max(p.K, 1), mmMaxK)
	shrink := func(outer, inner *int, ld int) {
		if *outer > 1 {
			*outer = max(1, (limit-*inner)/ld+1)
		} else {
			*inner = limit
		}
	}
	for {
		s := mmSpan(p, mc, nc, kc)
		switch {
		case s.a > limit && p.TransA:
			shrink(&kc, &mc, p.M)
		case s.a > limit:
			shrink(&mc, &kc, p.K)
		case s.b > limit && p.TransB:
			shrink(&nc, &kc, p.K)
		case s.b > limit:
			shrink(&kc, &nc, p.N)
		case s.out > limit:
			shrink(&mc, &nc, p.N)
		case s.bias > limit:
			nc = limit
		default:
			round := func(c, full, t int) int {
				if c < full && c > t {
					return c / t * t
				}
				return c
			}
			return round(mc, p.M, bm), round(nc, p.N, bn), round(kc, p.K, mmBK)
		}
	}
}

// MatMul computes out = op(a) @ op(bm) (+ bias) for p.Batch products (see tensor.Backend). A
// product whose operands do not fit a storage-buffer window is computed in chunks: along M and
// N into disjoint parts of out, and along K, when even one row or column is too long, by
// passes that each add their part of the sum to out in increasing k.
func (b *Backend) MatMul(out, a, bm, bias *tensor.Tensor, p tensor.MatMulParams) {
	mmCheckDims(p)
	b.mmCost(p)
	ops := b.mmViews(out, a, bm, bias, p)
	if p.M == 0 || p.N == 0 {
		return
	}
	kern, err := b.mmKernelFor(p.M, p.N, max(p.Batch, 1))
	if err != nil {
		b.setErr(err)
		return
	}
	plan := b.mmChunking(p, kern)
	b.mmDispatchChunks(p, ops, kern, plan)
}

// mmCheckDims panics on a negative dimension.
func mmCheckDims(p tensor.MatMulParams) {
	if p.M < 0 || p.N < 0 || p.K < 0 || p.Batch < 0 {
		panic(fmt.Sprintf("vk: MatMul: negative dimension in M=%d N=%d K=%d batch=%d", p.M, p.N, p.K, p.Batch))
	}
}

// mmCost counts the product's flops and the bytes it reads and writes.
func (b *Backend) mmCost(p tensor.MatMulParams) {
	M, N, K := p.M, p.N, p.K
	batch := max(p.Batch, 1)
	rw := float64(M*K + K*N + M*N)
	if p.Accumulate {
		rw += float64(M * N)
	}
	flops := 2 * float64(M) * float64(N) * float64(K)
	if p.GeluOut != nil { // as GeluForward counts it
		rw += float64(M * N)
		flops += 12 * float64(M*N)
	}
	b.dev.Cost(float64(batch)*flops, 4*float64(batch)*rw)
}

// mmOperands are the buffers a product binds and the element each tensor starts at there.
type mmOperands struct {
	out, a, b, bias, gelu                *storage // bias and gelu are nil for a product without them
	offOut, offA, offB, offBias, offGelu int
}

// mmViews views the product's tensors, panicking where one is too small for its matrices.
func (b *Backend) mmViews(out, a, bm, bias *tensor.Tensor, p tensor.MatMulParams) mmOperands {
	batch := max(p.Batch, 1)
	var ops mmOperands
	ops.out, ops.offOut = b.mmView(out, "out", batch*p.M*p.N), out.Offset
	ops.a, ops.offA = b.mmView(a, "a", batch*p.M*p.K), a.Offset
	ops.b, ops.offB = b.mmView(bm, "b", batch*p.K*p.N), bm.Offset
	if bias != nil {
		ops.bias, ops.offBias = b.mmView(bias, "bias", p.N), bias.Offset
	}
	if p.GeluOut != nil {
		ops.gelu, ops.offGelu = b.mmView(p.GeluOut, "GeluOut", batch*p.M*p.N), p.GeluOut.Offset
	}
	return ops
}

// mmView views one float32 operand of at least n elements.
func (b *Backend) mmView(t *tensor.Tensor, arg string, n int) *storage {
	st := b.view(t, tensor.Float32, "MatMul")
	if t.Numel() < n {
		panic(fmt.Sprintf("vk: MatMul: %s has %d elements, needs %d", arg, t.Numel(), n))
	}
	return st
}

// mmVec4 says whether a chunk's operands can be read as vec4s: both start at a multiple of 4
// elements, as do their rows, and the contiguous extent of each (k of A, n of B, or m and k
// when transposed) is a multiple of 4, so a vec4 is either wholly inside the chunk or wholly out.
func mmVec4(p tensor.MatMulParams, offA, offB uint32, mn, nn, kn, lda, ldb int) bool {
	extA, extB := kn, nn
	if p.TransA {
		extA = mn
	}
	if p.TransB {
		extB = kn
	}
	return kn > 0 && offA%4 == 0 && offB%4 == 0 && lda%4 == 0 && ldb%4 == 0 && extA%4 == 0 && extB%4 == 0
}

var kSplitKReduce = Kernel{Shader: "matmul_splitk_reduce", Bindings: 4, Push: 10}

// mmSplitK computes one whole product (all zn batches) in splits parts along K: the tiled
// kernel writes each part's sum into scratch, zn*splits slices of M*N, and the reduction adds
// them in order of the split into out, applying the bias, accumulate and GELU flags there.
func (b *Backend) mmSplitK(k Kernel, groups [3]uint32, push matmulTiledPush, args [5]Arg, splits, ksplit, total int) bool {
	scratch, err := b.scratchFor(total * splits)
	if err != nil {
		b.setErr(err)
		return false
	}
	ws, err := b.dev.Window(scratch, 0, total*splits)
	if err != nil {
		b.setErr(err)
		return false
	}
	out, bias, gelu, flags := args[0], args[3], args[4], push.Flags
	part := push
	part.OffOut, part.StrideOut, part.Flags = ws.First, push.M*push.N, flags&(mmTransA|mmTransB)
	part.Splits, part.Ksplit = uint32(splits), uint32(ksplit)
	args[0] = Arg{W: ws, Write: true}
	groups[2] *= uint32(splits)
	if err := b.dev.Dispatch(k, groups, pushOf(&part), args[:]...); err != nil {
		b.setErr(err)
		return false
	}
	r := kSplitKReduce
	r.Local = [3]uint32{b.wg, 1, 1}
	g := uint32(min(mmCeilDiv(total, int(b.wg)), int(b.dev.Info.MaxComputeWorkGroupCount[0]), 4096))
	rp := splitKReducePush{Total: uint32(total), Mn: push.M * push.N, N: push.N, Splits: uint32(splits),
		OffOut: out.W.First, OffPart: ws.First, OffBias: push.OffBias, Flags: flags &^ (mmTransA | mmTransB),
		OffGelu: push.OffGelu, Scaling: push.Scaling}
	b.dev.Cost(float64(splits*total), 4*float64((splits+1)*total))
	if err := b.dev.Dispatch(r, [3]uint32{g, 1, 1}, pushOf(&rp), out, Arg{W: ws}, bias, gelu); err != nil {
		b.setErr(err)
		return false
	}
	return true
}

// BiasBackward accumulates dbias[j] += sum over the N rows of dout[i, j]. Workgroups sum blocks
// of rows into partials, and a second pass adds the partials of each column in order, so the
// result depends only on N, C and the device's workgroup size.
func (b *Backend) BiasBackward(dbias, dout *tensor.Tensor, N, C int) {
	const op = "BiasBackward"
	if N < 0 || C < 0 {
		panic(fmt.Sprintf("vk: BiasBackward: negative dimension in N=%d C=%d", N, C))
	}
	dst, ist := b.view(dbias, tensor.Float32, op), b.view(dout, tensor.Float32, op)
	if dbias.Numel() < C || dout.Numel() < N*C {
		panic(fmt.Sprintf("vk: BiasBackward: dbias has %d elements and dout %d, need %d and %d", dbias.Numel(), dout.Numel(), C, N*C))
	}
	if N == 0 || C == 0 {
		return
	}
	wx := min(32, b.wg)
	wy := b.wg / wx
	k := Kernel{Shader: "bias_backward", Bindings: 2, Push: 8, Local: [3]uint32{wx, wy, 1}}
	lim := b.maxChunk
	// Chunks of rc rows and cc columns whose span (rc-1)*C + cc fits a window.
	cc := min(C, lim, int(b.dev.Info.MaxComputeWorkGroupCount[0])*int(wx))
	// At most 4M rows per chunk keep each lane's loop short (see mmMaxK).
	rc := min(N, max(1, (lim-cc)/C+1), 1<<22)
	// Enough row blocks to keep about 512 workgroups busy, each lane adding at least 8 rows.
	blocks := max(1, min(mmCeilDiv(rc, 8*int(wy)), mmCeilDiv(512, mmCeilDiv(cc, int(wx))), int(b.dev.Info.MaxComputeWorkGroupCount[1])))
	var scratch *Buffer
	if blocks > 1 {
		var err error
		if scratch, err = b.scratchFor(blocks * cc); err != nil {
			b.setErr(err)
			return
		}
	}
	k4, vec4 := b.biasVec4(k, C, cc, scratch, dbias, dout, dst, ist)
	dispatch := func(groups [3]uint32, push biasBackwardPush, wo, wi Window) bool {
		k := k
		// Rows x Cols read and added; a row of sums per block of rows written, or added
		// into dbias (read and written).
		in, sums := float64(push.Rows)*float64(push.Cols), float64(groups[1])*float64(push.Cols)
		if push.Flags&1 != 0 {
			sums *= 2
		}
		b.dev.Cost(in, 4*(in+sums))
		if vec4 {
			k, push = k4, push.inVec4s()
			groups[0] = uint32(mmCeilDiv(int(push.Cols), int(wx)))
		}
		if err := b.dev.Dispatch(k, groups, pushOf(&push), Arg{W: wo, Write: true}, Arg{W: wi}); err != nil {
			b.setErr(err)
			return false
		}
		return true
	}
	for r0 := 0; r0 < N; r0 += rc {
		rn := min(rc, N-r0)
		per := mmCeilDiv(rn, blocks)
		nb := mmCeilDiv(rn, per)
		for c0 := 0; c0 < C; c0 += cc {
			cn := min(cc, C-c0)
			wi, err1 := b.dev.Window(ist.buf, dout.Offset+r0*C+c0, (rn-1)*C+cn)
			wd, err2 := b.dev.Window(dst.buf, dbias.Offset+c0, cn)
			if err := firstErr(err1, err2); err != nil {
				b.setErr(err)
				return
			}
			groups := [3]uint32{uint32(mmCeilDiv(cn, int(wx))), uint32(nb), 1}
			if nb == 1 {
				push := biasBackwardPush{Rows: uint32(rn), Cols: uint32(cn), LdIn: uint32(C), LdOut: 0, RowsPer: uint32(rn), OffOut: wd.First, OffIn: wi.First, Flags: 1}
				if !dispatch(groups, push, wd, wi) {
					return
				}
				continue
			}
			wp, err := b.dev.Window(scratch, 0, nb*cn)
			if err != nil {
				b.setErr(err)
				return
			}
			partials := biasBackwardPush{Rows: uint32(rn), Cols: uint32(cn), LdIn: uint32(C), LdOut: uint32(cn), RowsPer: uint32(per), OffOut: wp.First, OffIn: wi.First, Flags: 0}
			if !dispatch(groups, partials, wp, wi) {
				return
			}
			groups[1] = 1
			sum := biasBackwardPush{Rows: uint32(nb), Cols: uint32(cn), LdIn: uint32(cn), LdOut: 0, RowsPer: uint32(nb), OffOut: wd.First, OffIn: wp.First, Flags: 1}
			if !dispatch(groups, sum, wd, wp) {
				return
			}
		}
	}
}
