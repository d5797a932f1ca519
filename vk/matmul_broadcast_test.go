package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestMatMulBroadcastShapes runs the broadcast kernel with workgroups other than the default
// (one subgroup, odd row-group and column counts, several subgroups) over shapes that leave
// partial tiles in both directions, with every transpose, batch, bias and accumulate, and
// over a K beyond one pass.
func TestMatMulBroadcastShapes(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	if !mmBroadcastFits(vb.dev.Info) {
		t.Skipf("%s has no fixed subgroup size with shuffles", vb.dev.Info.Name)
	}
	cb := cpu.New()
	sg := int(vb.dev.Info.SubgroupSize)
	t.Cleanup(func() { mmForceShader, mmForceBroadcast = "", mmBroadcast{} })
	mmForceShader = "matmul_broadcast"
	for i, s := range []mmBroadcast{{WX: sg, RM: 1, TN: 1, SG: sg}, {WX: sg, RM: 3, TN: 2, SG: sg}, {WX: 4 * sg, RM: 2, TN: 3, SG: sg}, mmBroadcastShape(sg)} {
		mmForceBroadcast = s
		for j, c := range mmTiledCases() {
			checkMatMul(t, vb, cb, c, uint64(700+100*i+j))
		}
		checkMatMul(t, vb, cb, mmCase{M: 3, N: 50, K: 20001, ta: i%2 == 0, tb: i > 1, bias: true, accum: i == 1}, uint64(790+i))
	}
}

// TestMatMulCPUKernel checks that a CPU implementation with subgroup shuffles runs products
// on the broadcast kernel, with row tiles along x when out is wider than tall and along y
// otherwise (both against the CPU backend).
func TestMatMulCPUKernel(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	info := vb.dev.Info
	if info.Type != DeviceCPU || !mmBroadcastFits(info) || info.TimestampBits == 0 {
		t.Skipf("%s is not a CPU implementation with subgroup shuffles and timestamps", info.Name)
	}
	t.Setenv("VKGRAD_MATMUL_KERNEL", "")
	t.Setenv(mmTileEnv, "")
	cb := cpu.New()
	for i, c := range []mmCase{{M: 40, N: 300, K: 33, tb: true, bias: true}, {M: 300, N: 40, K: 33, ta: true, accum: true}} {
		calls := mmRunKernels(t, vb, func() { checkMatMul(t, vb, cb, c, uint64(900+i)) })
		if calls["matmul_broadcast"] != 1 || len(calls) != 1 {
			t.Fatalf("%v: kernels %v, want matmul_broadcast once", c, calls)
		}
	}
}
