package vk

import (
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestMatMulBroadcastShapes runs the broadcast kernel with workgroups other than the default
// (one subgroup, odd row-group and column counts, several subgroups, two vec4s of out per
// invocation; the default is the parity tests') over shapes that leave partial tiles in both directions, with every
// transpose, batch, bias and accumulate, aligned or not, and over a K beyond one pass.
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
	for i, s := range []mmBroadcast{{WX: sg, RM: 1, TN: 1, SG: sg}, {WX: sg, RM: 3, TN: 2, SG: sg}, {WX: 4 * sg, RM: 2, TN: 3, SG: sg}, {WX: sg, RM: 1, TN: 8, SG: sg}} {
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

// TestMatMulBroadcastSameBits: with vec4 loads (operands aligned, M, N and K multiples of 4)
// and without, the broadcast kernel sums every output in matmul_direct's order, so the two
// give the same bits, for each transpose with batches, bias and accumulation.
func TestMatMulBroadcastSameBits(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	if !mmBroadcastFits(vb.dev.Info) {
		t.Skipf("%s has no fixed subgroup size with shuffles", vb.dev.Info.Name)
	}
	t.Cleanup(func() { mmForceShader = "" })
	r := rand.New(rand.NewPCG(10, 11))
	for tr := range 4 {
		for _, c := range []mmCase{{M: 36, N: 72, K: 132, batch: 2, bias: true, accum: tr%2 == 0}, {M: 37, N: 70, K: 131, bias: tr > 1}} {
			c.ta, c.tb = tr&1 != 0, tr&2 != 0
			batch := max(c.batch, 1)
			ha, hb, hbias, hout := randVec(r, batch*c.M*c.K), randVec(r, batch*c.K*c.N), randVec(r, c.N), randVec(r, batch*c.M*c.N)
			var outs [2][]float32
			for i, k := range []string{"matmul_direct", "matmul_broadcast"} {
				mmForceShader = k
				va, vbm, vout := backendtest.OnBackend(t, vb, ha, 0), backendtest.OnBackend(t, vb, hb, 0), backendtest.OnBackend(t, vb, hout, 0)
				var vbias *tensor.Tensor
				if c.bias {
					vbias = backendtest.OnBackend(t, vb, hbias, 0)
				}
				vb.MatMul(vout, va, vbm, vbias, tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.ta, TransB: c.tb, Accumulate: c.accum, Batch: c.batch})
				outs[i] = download(t, vb, vout)
			}
			assertExact(t, c.String(), outs[1], outs[0])
		}
	}
}

// TestMatMulBroadcastFits: the kernel needs subgroup shuffles, a subgroup of at most 16 lanes,
// and a size the driver either uses alone or lets the pipeline pin.
func TestMatMulBroadcastFits(t *testing.T) {
	for _, c := range []struct {
		name string
		info DeviceInfo
		want bool
	}{
		{"lavapipe", DeviceInfo{SubgroupSize: 8, SubgroupShuffle: true, MinSubgroupSize: 8, MaxSubgroupSize: 8, MaxComputeWorkgroupSubgroups: 128}, true},
		{"no size control", DeviceInfo{SubgroupSize: 4, SubgroupShuffle: true}, true},
		{"pinned among several", DeviceInfo{SubgroupSize: 16, SubgroupShuffle: true, MinSubgroupSize: 8, MaxSubgroupSize: 32, MaxComputeWorkgroupSubgroups: 64}, true},
		{"varying, not pinnable", DeviceInfo{SubgroupSize: 16, SubgroupShuffle: true, MinSubgroupSize: 8, MaxSubgroupSize: 32}, false},
		{"no shuffles", DeviceInfo{SubgroupSize: 8}, false},
		{"GPU-wide subgroup", DeviceInfo{SubgroupSize: 32, SubgroupShuffle: true}, false},
	} {
		if got := mmBroadcastFits(c.info); got != c.want {
			t.Errorf("%s: mmBroadcastFits = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMatMulBroadcastShapeRows: whatever the subgroup size the kernel fits (lavapipe runs 4, 8
// or 16 lanes as its registers are 128, 256 or 512 bits wide), a workgroup's tile keeps 32
// rows, so an invocation holds 128 accumulators; at 16 lanes four row groups made 256, which
// LLVM took over ten minutes to compile.
func TestMatMulBroadcastShapeRows(t *testing.T) {
	for _, sg := range []int{1, 2, 4, 8, 16} {
		s := mmBroadcastShape(sg)
		if s.SG != sg || s.tile().BM != 32 || s.RM*s.SG*s.TN != 128 || s.WX%sg != 0 {
			t.Errorf("subgroup %d: workgroup %+v, tile %+v; want 32 rows, 128 accumulators, whole subgroups", sg, s, s.tile())
		}
	}
}
