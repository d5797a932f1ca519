package vk

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/vkgrad/vkgrad/tensor"
)

// Causal attention as flash attention (shaders/attention_flash_*.glsl): a workgroup owns a
// block of rows and streams the other operand through shared memory in tiles, so the B·NH·T·T
// score matrix never reaches device memory. The forward saves one log-sum-exp per query; the
// backward recomputes the probabilities from it in a query pass (dq) and a key pass (dk, dv),
// each gradient summed by one invocation in a fixed order: no atomics, repeatable bits.

// On a CPU implementation of Vulkan the broadcast kernels (shaders/attention_broadcast_*.comp)
// replace them where the device has subgroup shuffles: one row per invocation and no shared
// memory, which there only adds barriers and lane-by-lane loads, the other side's rows passed
// between lanes by shuffles (gpt2-mini's three attention passes on lavapipe: 3.5-5x faster
// than flash with each row read at one address for all lanes, and 3-4x faster again with
// shuffles). Both kinds take the same bindings and push constants, and are chosen per device,
// never mixed.

// flashRows is the rows of the block a workgroup owns (BR in the shaders); the workgroup is
// flashRows rows of flashLanes invocations.
const (
	flashRows  = 16
	flashLanes = 8
)

// flashKernels are one shader's variants for head sizes up to 64 and up to 128: the larger
// needs about 26 KiB of shared memory, the smaller fits in 16 KiB.
type flashKernels [2]Kernel

func newFlashKernels(shader string, bindings, push int) flashKernels {
	local := [3]uint32{flashRows * flashLanes, 1, 1}
	return flashKernels{
		{Shader: shader + "_h64", Bindings: bindings, Push: push, Local: local},
		{Shader: shader + "_h128", Bindings: bindings, Push: push, Local: local},
	}
}

var (
	kFlashForward     = newFlashKernels("attention_flash_forward", 5, 16)
	kFlashQuery       = newFlashKernels("attention_flash_query", 6, 12)
	kFlashKey         = newFlashKernels("attention_flash_key", 5, 12) // all but out
	kAttentionKVCache = Kernel{Shader: "attention_kvcache", Bindings: 3, Push: 8}
)

// flashMaxHead is the largest head size the flash kernels hold in shared memory.
const flashMaxHead = 128

// flashSharedBytes bounds the shared memory of the variants for heads up to hsMax: three
// padded tiles of flashRows rows (or two of them and two of half the rows) plus the score
// tiles and a reduction row.
func flashSharedBytes(hsMax int) uint32 {
	return uint32(4 * (3*flashRows*(hsMax+1) + 2*flashRows*(flashRows+1) + flashRows*flashLanes))
}

// flashKernel picks the variant of ks for head size hs (at most flashMaxHead), or records an
// error when the device's shared memory is too small for it.
func (b *Backend) flashKernel(op string, ks flashKernels, hs int) (Kernel, bool) {
	v, hsMax := 0, 64
	if hs > 64 {
		v, hsMax = 1, flashMaxHead
	}
	if need, have := flashSharedBytes(hsMax), b.dev.Info.MaxComputeSharedMemorySize; need > have {
		b.setErr(fmt.Errorf("vk: %s: head size %d needs %d bytes of shared memory; the device has %d", op, hs, need, have))
		return Kernel{}, false
	}
	return ks[v], true
}

// flashRBVariant is one head-size variant of a register-blocked flash kernel
// (shaders/attention_flash_rb_*.glsl): a workgroup owns rows rows (BR), each invocation a
// block of them in registers; in the forward the lanes invocations that share a row (CG)
// reduce its maximum and sum by subgroup shuffles.
type flashRBVariant struct {
	kernel   Kernel
	rows     int
	lanes    uint32
	shuffles bool   // the kernel reduces rows by subgroup shuffles
	shared   uint32 // bytes of shared memory
}

// flashRBInvocations is the workgroup size of every register-blocked variant.
const flashRBInvocations = 64

// flashRBKernels are the three passes' register-blocked variants for heads up to 64 and up
// to 128.
type flashRBKernels struct{ forward, query, key [2]flashRBVariant }

// flashRBForwardShared, flashRBQueryShared and flashRBKeyShared are the bytes of shared
// memory the register-blocked passes declare for heads up to hsMax, rows owned rows, tiles of
// keys streamed rows and lanes invocations a row: tiles of rows of hsMax/4 vec4s, each row
// padded by one vec4 (but the forward's values), and tiles of scores, keys rows of
// rows+32/lanes floats (the shaders' PSTR).
func flashRBForwardShared(hsMax, rows, keys, lanes int) uint32 {
	q, pstr := hsMax/4, rows+32/lanes
	return uint32(16*(rows*(q+1)+keys*(q+1)+keys*q) + 4*keys*pstr)
}

func flashRBQueryShared(hsMax, rows, keys, lanes int) uint32 {
	q, pstr := hsMax/4, rows+32/lanes
	return uint32(16*(2*rows*(q+1)+2*keys*(q+1)) + 4*keys*pstr)
}

func flashRBKeyShared(hsMax, rows, keys, lanes int) uint32 {
	q, pstr := hsMax/4, rows+32/lanes
	return uint32(16*(2*rows*(q+1)+2*keys*(q+1)) + 8*keys*pstr + 8*keys)
}

// flashRBVariantOf is a register-blocked variant taking the bindings and push constants of
// its pass's flash kernel.
func flashRBVariantOf(shader string, like flashKernels, rows int, lanes uint32, shuffles bool, shared uint32) flashRBVariant {
	k := Kernel{Shader: shader, Bindings: like[0].Bindings, Push: like[0].Push, Local: [3]uint32{flashRBInvocations, 1, 1}}
	return flashRBVariant{kernel: k, rows: rows, lanes: lanes, shuffles: shuffles, shared: shared}
}

// kFlashRB: the forward owns 64 queries for heads up to 64 (tiles of 16 keys; an invocation
// 4x4 scores and 4 rows of 16 outputs) and 32 up to 128 (tiles of 8; 4x1 and 4 rows of 16);
// the backward passes own 32 rows up to 64 (tiles of 16; 2x4 scores and 2 rows of 16
// accumulators) and 16 up to 128 (tiles of 8; 2x1 and 2 rows of 16). Each fits in 32 KiB of
// shared memory.
var kFlashRB = flashRBKernels{
	forward: [2]flashRBVariant{
		flashRBVariantOf("attention_flash_rb_forward_h64", kFlashForward, 64, 4, true, flashRBForwardShared(64, 64, 16, 4)),
		flashRBVariantOf("attention_flash_rb_forward_h128", kFlashForward, 32, 8, true, flashRBForwardShared(128, 32, 8, 8)),
	},
	query: [2]flashRBVariant{
		flashRBVariantOf("attention_flash_rb_query_h64", kFlashQuery, 32, 4, false, flashRBQueryShared(64, 32, 16, 4)),
		flashRBVariantOf("attention_flash_rb_query_h128", kFlashQuery, 16, 8, false, flashRBQueryShared(128, 16, 8, 8)),
	},
	key: [2]flashRBVariant{
		flashRBVariantOf("attention_flash_rb_key_h64", kFlashKey, 32, 4, false, flashRBKeyShared(64, 32, 16, 4)),
		flashRBVariantOf("attention_flash_rb_key_h128", kFlashKey, 16, 8, false, flashRBKeyShared(128, 16, 8, 8)),
	},
}

// flashRBUnfit says why a device cannot run register-blocked variant v, or "" when it can.
func flashRBUnfit(info DeviceInfo, v flashRBVariant) string {
	sg := info.SubgroupSize
	if info.MinSubgroupSize != 0 && info.MinSubgroupSize < sg {
		sg = info.MinSubgroupSize
	}
	switch {
	case v.shuffles && !info.SubgroupShuffle:
		return fmt.Sprintf("%s needs subgroup shuffles in compute shaders", v.kernel.Shader)
	case v.shuffles && sg < v.lanes:
		return fmt.Sprintf("%s needs subgroups of at least %d invocations; the device's may have %d", v.kernel.Shader, v.lanes, sg)
	case v.shared > info.MaxComputeSharedMemorySize:
		return fmt.Sprintf("%s needs %d bytes of shared memory; the device has %d", v.kernel.Shader, v.shared, info.MaxComputeSharedMemorySize)
	case v.kernel.Local[0] > info.MaxComputeWorkGroupInvocations || v.kernel.Local[0] > info.MaxComputeWorkGroupSize[0]:
		return fmt.Sprintf("%s needs workgroups of %d invocations", v.kernel.Shader, v.kernel.Local[0])
	}
	return ""
}

// describeFlashRB says whether a device can run every register-blocked attention kernel, or
// which ones it cannot and why (flash runs in their place), for Describe.
func describeFlashRB(d DeviceInfo) string {
	var unfit []string
	for _, vs := range [][2]flashRBVariant{kFlashRB.forward, kFlashRB.query, kFlashRB.key} {
		for _, v := range vs {
			if why := flashRBUnfit(d, v); why != "" {
				unfit = append(unfit, why)
			}
		}
	}
	if len(unfit) == 0 {
		return fmt.Sprintf("%s available (%s=%s)", attnFlashRB, attnKernelEnv, attnFlashRB)
	}
	return fmt.Sprintf("%s partly: flash runs where %s", attnFlashRB, strings.Join(unfit, "; "))
}

// attnRBPlan is the register-blocked variant of vs for head size C/NH and its grid over T
// rows, when the backend runs them (VKGRAD_ATTENTION_KERNEL=flash_rb) and the device can;
// false otherwise, recording nothing: the caller falls back to attnPlan's kernels.
func (b *Backend) attnRBPlan(vs [2]flashRBVariant, T, C, NH int) (Kernel, attnGrid, bool) {
	hs := C / NH
	if !b.attnRB || b.attnBroadcast || hs > flashMaxHead {
		return Kernel{}, attnGrid{}, false
	}
	v := vs[0]
	if hs > 64 {
		v = vs[1]
	}
	lim := b.dev.Info.MaxComputeWorkGroupCount
	g := attnGrid{uint32(((T+v.rows-1)/v.rows + 1) / 2), uint32(NH), lim[2]}
	if flashRBUnfit(b.dev.Info, v) != "" || g.x > lim[0] || g.y > lim[1] {
		return Kernel{}, attnGrid{}, false
	}
	return v.kernel, g, true
}

// attnForwardPlan is attnPlan for the forward kernel, the register-blocked variant where
// attnRBPlan gives one.
func (b *Backend) attnForwardPlan(op string, T, C, NH int) (Kernel, int, attnGrid, bool) {
	if k, g, ok := b.attnRBPlan(kFlashRB.forward, T, C, NH); ok {
		return k, C / NH, g, true
	}
	return b.attnPlan(op, kFlashForward, kBroadcastForward, T, C, NH)
}

// The broadcast kernels; the head size is their specialization constant 3.
var (
	kBroadcastForward = Kernel{Shader: "attention_broadcast_forward", Bindings: 5, Push: 16}
	kBroadcastQuery   = Kernel{Shader: "attention_broadcast_query", Bindings: 6, Push: 12}
	kBroadcastKey     = Kernel{Shader: "attention_broadcast_key", Bindings: 5, Push: 12} // all but out
)

// attnForce, when set by tests, replaces the kind of attention kernels the device would run.
var attnForce string

// attnKernelEnv overrides the kind: flash, flash_rb or broadcast.
const attnKernelEnv = "VKGRAD_ATTENTION_KERNEL"

// attnFlashRB is the kind that runs flash attention with the register-blocked kernels where
// the device can run them (flashRBUnfit), the flash kernels elsewhere.
const attnFlashRB = "flash_rb"

// attnKind is the kind attnForce or VKGRAD_ATTENTION_KERNEL asks for, "" for the device's own.
func attnKind() string {
	if attnForce != "" {
		return attnForce
	}
	return os.Getenv(attnKernelEnv)
}

// attnBroadcastOn says whether attention runs the broadcast kernels on a device: on CPU
// implementations, unless attnForce or VKGRAD_ATTENTION_KERNEL says otherwise. The backend
// decides once, when it is made.
func attnBroadcastOn(info DeviceInfo) bool {
	switch attnKind() {
	case "flash", attnFlashRB:
		return false
	case "broadcast":
		return true
	}
	return info.Type == DeviceCPU && info.SubgroupShuffle
}

// attnRegisterBlockedOn says whether the backend asks for the register-blocked kernels.
func attnRegisterBlockedOn() bool { return attnKind() == attnFlashRB }

// attnGrid is the grid of an attention pass: x blocks of rows (pairs of blocks for flash),
// y heads, and up to zmax sequences (the shaders loop over the rest).
type attnGrid struct{ x, y, zmax uint32 }

// of is the grid of a dispatch over cr sequences.
func (g attnGrid) of(cr int) [3]uint32 { return [3]uint32{g.x, g.y, min(uint32(cr), g.zmax)} }

// attnPlan picks the kernel of one attention pass (flash's variant for the head size C/NH, or
// its broadcast twin) and its grid over T rows per sequence; it returns false when it
// recorded an error (a head or grid the device cannot run).
func (b *Backend) attnPlan(op string, flash flashKernels, broadcast Kernel, T, C, NH int) (k Kernel, hs int, g attnGrid, ok bool) {
	hs = C / NH
	k, ok = b.attnKernel(op, flash, broadcast, hs)
	if !ok {
		return Kernel{}, hs, attnGrid{}, false
	}
	lim := b.dev.Info.MaxComputeWorkGroupCount
	g = attnGrid{uint32((blocksOf(T) + 1) / 2), uint32(NH), lim[2]}
	if b.attnBroadcast {
		w := int(k.Local[0])
		g.x = uint32((T + w - 1) / w)
	}
	if g.x > lim[0] || g.y > lim[1] {
		b.setErr(fmt.Errorf("vk: %s: T=%d and NH=%d exceed the device's workgroup counts %v", op, T, NH, lim))
		return Kernel{}, hs, attnGrid{}, false
	}
	return k, hs, g, true
}

// attnKernel is flash's variant for head size hs, or on devices that take the broadcast kernels
// broadcast with one subgroup of invocations (a CPU's SIMD row), the subgroup size pinned
// where the device allows, and hs and the subgroup size specialised.
func (b *Backend) attnKernel(op string, flash flashKernels, broadcast Kernel, hs int) (Kernel, bool) {
	if hs > flashMaxHead {
		b.setErr(fmt.Errorf("vk: %s: head size %d (C/NH) exceeds the largest supported, %d", op, hs, flashMaxHead))
		return Kernel{}, false
	}
	if !b.attnBroadcast {
		return b.flashKernel(op, flash, hs)
	}
	if !b.dev.Info.SubgroupShuffle {
		b.setErr(fmt.Errorf("vk: %s: the broadcast attention kernels need subgroup shuffles, which %s lacks (%s=flash, or unset, runs flash attention)", op, b.dev.Info.Name, attnKernelEnv))
		return Kernel{}, false
	}
	k := broadcast
	sg := max(b.dev.Info.SubgroupSize, 1)
	k.Local = [3]uint32{sg, 1, 1}
	k.Spec[0], k.Spec[1] = uint32(hs), sg
	k.SubgroupSize = pinnedSubgroupSize(b.dev.Info, sg)
	return k, true
}

func blocksOf(T int) int { return (T + flashRows - 1) / flashRows }

// causalPairs is the (query, key) pairs of causal attention over B sequences of NH heads for
// Tq queries at positions pos..pos+Tq-1: the dot products every kind of kernel computes.
func causalPairs(B, NH, Tq, pos int) float64 {
	return float64(B*NH) * (float64(Tq)*float64(pos) + float64(Tq)*float64(Tq+1)/2)
}

// attnScale is llm.c's 1.0 / sqrtf(hs), as the CPU backend computes it.
func attnScale(hs int) float32 {
	return float32(1 / float64(float32(math.Sqrt(float64(float32(hs))))))
}

func checkHeads(op string, C, NH int) {
	if NH <= 0 || C%NH != 0 {
		panic(fmt.Sprintf("vk: %s: C=%d not divisible into NH=%d heads", op, C, NH))
	}
}

// AttentionSaved implements tensor.Backend: the forward saves one log-sum-exp per query and
// the backward's scratch holds one dout·out per query.
func (b *Backend) AttentionSaved(B, T, NH int) (att, scratch int) { return B * NH * T, B * NH * T }

// AttentionForward runs causal flash attention in chunks of whole sequences; att receives the
// log-sum-exp of each query's scores, (B,NH,T).
func (b *Backend) AttentionForward(out, att, qkv *tensor.Tensor, B, T, C, NH int) {
	const op = "AttentionForward"
	nnDims(op, B, T, C)
	checkHeads(op, C, NH)
	os, ls, qs := nnF32(b, op, "out", out, B*T*C), nnF32(b, op, "att", att, B*NH*T), nnF32(b, op, "qkv", qkv, B*T*3*C)
	if B*T*C == 0 {
		return
	}
	k, hs, grid, ok := b.attnForwardPlan(op, T, C, NH)
	if !ok {
		return
	}
	args := []nnArg{
		nnRows(os, out, T*C, B*T*C, true), nnRows(ls, att, NH*T, B*NH*T, true),
		nnRows(qs, qkv, T*3*C, B*T*3*C, false), nnRows(qs, qkv, T*3*C, B*T*3*C, false), nnRows(qs, qkv, T*3*C, B*T*3*C, false),
	}
	scale := attnScale(hs)
	// q·k and p·v for each pair; q, k and v read, out and the log-sum-exps written.
	b.dev.Cost(4*float64(hs)*causalPairs(B, NH, T, 0), 4*(4*float64(B*T*C)+float64(B*NH*T)))
	nnRun(b, k, op, B, args, grid.of, func(_, cr int, f firsts) flashForwardPush {
		return flashForwardPush{Tq: uint32(T), NH: uint32(NH), Hs: uint32(hs), Qstride: uint32(3 * C), Kvstride: uint32(3 * C),
			Kvbatch: uint32(T * 3 * C), Ostride: uint32(C), Pos: 0, B: uint32(cr),
			OffOut: f[0], OffLse: f[1], OffQ: f[2], OffK: f[3] + uint32(C), OffV: f[4] + uint32(2*C), Scale: scale, WriteLse: 1}
	})
}

// AttentionBackward accumulates into dqkv in two passes: per block of queries (dq, and dout·out
// per query into scratch), then per block of keys (dk and dv, over the queries that see them).
func (b *Backend) AttentionBackward(dqkv, scratch, dout, qkv, out, att *tensor.Tensor, B, T, C, NH int) {
	const op = "AttentionBackward"
	nnDims(op, B, T, C)
	checkHeads(op, C, NH)
	ds, ss := nnF32(b, op, "dqkv", dqkv, B*T*3*C), nnF32(b, op, "scratch", scratch, B*NH*T)
	dos, qs := nnF32(b, op, "dout", dout, B*T*C), nnF32(b, op, "qkv", qkv, B*T*3*C)
	os, ls := nnF32(b, op, "out", out, B*T*C), nnF32(b, op, "att", att, B*NH*T)
	if B*T*C == 0 {
		return
	}
	kq, hs, grid, ok := b.attnPlan(op, kFlashQuery, kBroadcastQuery, T, C, NH)
	if !ok {
		return
	}
	kk, _ := b.attnKernel(op, kFlashKey, kBroadcastKey, hs)
	// Both passes' register-blocked variants own the same rows, so share a grid.
	if rq, g, ok := b.attnRBPlan(kFlashRB.query, T, C, NH); ok {
		if rk, _, ok := b.attnRBPlan(kFlashRB.key, T, C, NH); ok {
			kq, kk, grid = rq, rk, g
		}
	}
	scale := attnScale(hs)
	push := func(_, cr int, f firsts) flashBackwardPush {
		return flashBackwardPush{T: uint32(T), NH: uint32(NH), Hs: uint32(hs), C: uint32(C), B: uint32(cr),
			OffDqkv: f[0], OffLse: f[1], OffDsum: f[2], OffDout: f[3], OffQkv: f[4], OffOut: f[5], Scale: scale}
	}
	args := []nnArg{
		nnRows(ds, dqkv, T*3*C, B*T*3*C, true), nnRows(ls, att, NH*T, B*NH*T, false), nnRows(ss, scratch, NH*T, B*NH*T, true),
		nnRows(dos, dout, T*C, B*T*C, false), nnRows(qs, qkv, T*3*C, B*T*3*C, false), nnRows(os, out, T*C, B*T*C, false),
	}
	// Each pass recomputes q·k for every pair; the query pass adds dout·v and dq's term, the
	// key pass dout·v, dv's and dk's terms. Both read q, k, v and dout; the query pass also
	// out, and accumulates dq, the key pass dk and dv.
	pairs, btc, bnht := causalPairs(B, NH, T, 0), float64(B*T*C), float64(B*NH*T)
	b.dev.Cost(6*float64(hs)*pairs, 4*(7*btc+2*bnht))
	nnRun(b, kq, op, B, args, grid.of, push)
	args[2].write = false
	b.dev.Cost(8*float64(hs)*pairs, 4*(8*btc+2*bnht))
	nnRun(b, kk, op, B, args[:5], grid.of, push)
}

// AttentionDecode writes the new keys and values into the caches, then runs the forward's
// kernel over the caches, so that each query's output has the same bits as in
// AttentionForward over the whole sequence (its key tiles start at key 0 in both).
func (b *Backend) AttentionDecode(out, kcache, vcache, qkv *tensor.Tensor, B, Tq, pos, maxT, C, NH int) {
	const op = "AttentionDecode"
	nnDims(op, B, Tq, pos, maxT, C)
	checkHeads(op, C, NH)
	if pos+Tq > maxT {
		panic(fmt.Sprintf("vk: %s: positions %d..%d past cache length %d", op, pos, pos+Tq-1, maxT))
	}
	os, qs := nnF32(b, op, "out", out, B*Tq*C), nnF32(b, op, "qkv", qkv, B*Tq*3*C)
	ks, vs := nnF32(b, op, "kcache", kcache, B*maxT*C), nnF32(b, op, "vcache", vcache, B*maxT*C)
	if B*Tq*C == 0 {
		return
	}
	k, hs, grid, ok := b.attnForwardPlan(op, Tq, C, NH)
	if !ok {
		return
	}
	b.dev.Cost(0, 4*4*float64(B*Tq*C)) // k and v read from qkv and written to the caches
	nnRun(b, kAttentionKVCache, op, B, []nnArg{
		nnRows(ks, kcache, maxT*C, B*maxT*C, true), nnRows(vs, vcache, maxT*C, B*maxT*C, true),
		nnRows(qs, qkv, Tq*3*C, B*Tq*3*C, false),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * Tq * C) }, func(_, cr int, f firsts) kvCachePush {
		return kvCachePush{N: uint32(cr * Tq * C), Tq: uint32(Tq), C: uint32(C), MaxT: uint32(maxT), Pos: uint32(pos), OffKc: f[0], OffVc: f[1], OffQkv: f[2]}
	})

	// No log-sum-exp is kept: its binding aliases out and is never written.
	lseStandIn := nnRows(os, out, Tq*C, B*Tq*C, false)
	lseStandIn.unused = true
	args := []nnArg{
		nnRows(os, out, Tq*C, B*Tq*C, true), lseStandIn,
		nnRows(qs, qkv, Tq*3*C, B*Tq*3*C, false), nnRows(ks, kcache, maxT*C, B*maxT*C, false), nnRows(vs, vcache, maxT*C, B*maxT*C, false),
	}
	scale := attnScale(hs)
	b.dev.Cost(4*float64(hs)*causalPairs(B, NH, Tq, pos), 4*(2*float64(B*Tq*C)+2*float64(B*(pos+Tq)*C)))
	nnRun(b, k, op, B, args, grid.of, func(_, cr int, f firsts) flashForwardPush {
		return flashForwardPush{Tq: uint32(Tq), NH: uint32(NH), Hs: uint32(hs), Qstride: uint32(3 * C), Kvstride: uint32(C),
			Kvbatch: uint32(maxT * C), Ostride: uint32(C), Pos: uint32(pos), B: uint32(cr),
			OffOut: f[0], OffLse: f[1], OffQ: f[2], OffK: f[3], OffV: f[4], Scale: scale, WriteLse: 0}
	})
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
