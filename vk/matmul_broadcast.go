package vk

// The CPU implementation's matmul kernel (shaders/matmul_broadcast.comp) and its workgroup.

// mmBroadcast is the kernel's workgroup: WX invocations in one row, each holding RM*SG rows
// by TN columns of out, SG being the subgroup size; a workgroup's tile is RM*SG x WX*TN.
type mmBroadcast struct{ WX, RM, TN, SG int }

// mmBroadcastShape is the workgroup on a device of subgroup size sg: 16 invocations (or one
// subgroup where that is more) of 4 row groups by 4 columns. 128 accumulators per invocation
// spill to the stack, but on lavapipe a load that differs between lanes costs far more than a
// spill, so the larger the block the fewer loads per product (measured on lavapipe as
// WX x RM x TN: 16x1x4 reached two thirds of 16x4x4's speed; 8x4x4 and 32x4x4 were no faster,
// 16x8x4 and 16x4x8 not clearly, at twice the compile time). Measured again on Mesa 25
// (LLVM 15) by CPU time over the lm head's products (M, N, K = 256, 50304, 128 with B
// transposed; 256, 128, 50304; 50304, 128, 256 with A transposed): 16x4x4 is the fastest of
// 8x4x4 (as fast), 16x4x2, 16x2x4, 16x3x4, 16x4x3, 16x6x2, 16x8x2 (20-45% slower), 16x2x8,
// 8x4x8, 8x8x4, 16x8x4, 16x4x8 and 32x4x4 (slower still, by spills), so one shape serves
// every shape class. The tile keeps its 32 rows whatever the subgroup size (RM = 32/SG):
// lavapipe built for 512-bit registers runs subgroups of 16, where 4 row groups would make
// 256 fully unrolled accumulators per invocation, which LLVM took over ten minutes to compile.
func mmBroadcastShape(sg int) mmBroadcast {
	return mmBroadcast{WX: max(16, sg), RM: max(1, 32/sg), TN: 4, SG: sg}
}

// mmForceBroadcast, when set by tests, replaces the workgroup chosen for the kernel.
var mmForceBroadcast mmBroadcast

func (s mmBroadcast) tile() mmTile {
	return mmTile{BM: s.RM * s.SG, BN: s.WX * s.TN, BK: 1, TM: s.RM * s.SG, TN: s.TN}
}

// kernel is the kernel for operands transposed as trans says (mmTransA|mmTransB), read as
// vec4s or not; it pins the subgroup size where the device allows, so that SG holds.
func (s mmBroadcast) kernel(info DeviceInfo, trans uint32, vec4 bool) Kernel {
	mode := trans
	if vec4 {
		mode |= 4
	}
	return Kernel{Shader: "matmul_broadcast", Bindings: 5, Push: 16, Local: [3]uint32{uint32(s.WX), 1, 1},
		Spec: [maxSpec]uint32{uint32(s.RM), uint32(s.TN), uint32(s.SG), mode}, SubgroupSize: pinnedSubgroupSize(info, uint32(s.WX))}
}

// mmBroadcastFits says whether the device runs the kernel: subgroup shuffles, and a subgroup
// size that either is pinned or is the only one the driver uses, and no wider than a CPU's
// SIMD registers (the tile has 4*SG rows: a GPU's 32 or 64 would hold 512 or 1024
// accumulators per invocation).
func mmBroadcastFits(info DeviceInfo) bool {
	sg := info.SubgroupSize
	fixed := pinnedSubgroupSize(info, max(16, sg)) != 0 || info.MaxSubgroupSize == 0 || info.MinSubgroupSize == info.MaxSubgroupSize
	return info.SubgroupShuffle && sg >= 1 && sg <= 16 && fixed
}

// mmBroadcastFor is the workgroup for the backend's device.
func (b *Backend) mmBroadcastFor() mmBroadcast {
	if mmForceBroadcast != (mmBroadcast{}) {
		return mmForceBroadcast
	}
	return mmBroadcastShape(int(b.dev.Info.SubgroupSize))
}
