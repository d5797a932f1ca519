package vk

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestSubgroupArithmeticNeedsComputeAndArithmetic checks which subgroup properties enable the
// subgroup variants: basic and arithmetic operations, both in the compute stage.
func TestSubgroupArithmeticNeedsComputeAndArithmetic(t *testing.T) {
	const all = subgroupFeatureBasic | subgroupFeatureArithmetic | 0x2 // and vote
	for _, c := range []struct {
		stages, ops uint32
		want        bool
	}{
		{shaderStageCompute, all, true},
		{shaderStageCompute | 0x10, subgroupFeatureBasic | subgroupFeatureArithmetic, true},
		{0x10, all, false}, // fragment only
		{shaderStageCompute, subgroupFeatureBasic, false},
		{shaderStageCompute, subgroupFeatureArithmetic, false},
	} {
		p := physicalDeviceSubgroupProperties{SupportedStages: c.stages, SupportedOperations: c.ops}
		if got := subgroupArithmetic(&p); got != c.want {
			t.Errorf("stages %#x, operations %#x: subgroup arithmetic %v, want %v", c.stages, c.ops, got, c.want)
		}
	}
}

// TestPinnedSubgroupSize checks when the subgroup variants fix their subgroup size: to the
// device's default, where it may be required and the widest workgroup fits in the subgroups
// a workgroup may have.
func TestPinnedSubgroupSize(t *testing.T) {
	for _, c := range []struct {
		size, lo, hi, most, wg uint32
		want                   uint32
	}{
		{8, 8, 8, 32, 256, 8},     // lavapipe
		{32, 8, 32, 64, 256, 32},  // an Intel-like range
		{64, 32, 64, 16, 256, 64}, // wave64 by default
		{32, 0, 0, 0, 256, 0},     // no subgroup size control
		{8, 8, 8, 16, 256, 0},     // 256 invocations need 32 subgroups of 8
		{16, 32, 64, 16, 256, 0},  // the default outside the range
		{0, 8, 8, 32, 256, 0},     // no subgroup size reported
	} {
		info := DeviceInfo{SubgroupSize: c.size, MinSubgroupSize: c.lo, MaxSubgroupSize: c.hi, MaxComputeWorkgroupSubgroups: c.most}
		if got := pinnedSubgroupSize(info, c.wg); got != c.want {
			t.Errorf("default %d, sizes %d..%d, %d subgroups, workgroup %d: pinned %d, want %d", c.size, c.lo, c.hi, c.most, c.wg, got, c.want)
		}
	}
}

// TestReduceKernelVariant checks that reductions run their subgroup variants where the device
// has subgroup arithmetic (lavapipe has), that VKGRAD_NO_SUBGROUP=1 keeps them on shared
// memory, that kernels without a reduction keep their shader, and that every variant in the
// table is embedded. Profiles name the kernel, whichever variant runs, and the subgroup
// variants require the device's subgroup size where it can be required.
func TestReduceKernelVariant(t *testing.T) {
	d := device(t)
	t.Setenv(noSubgroupEnv, "")
	b := NewBackendOn(d)
	defer b.Close()
	// lavapipe runs one subgroup size (4, 8 or 16 lanes by its register width); where a
	// 256-invocation workgroup has more subgroups than a pipeline may pin (4 lanes), that
	// one size is fixed without pinning.
	fixed := b.subgroupSize == d.Info.SubgroupSize || (b.subgroupSize == 0 && d.Info.MinSubgroupSize == d.Info.MaxSubgroupSize)
	if strings.Contains(d.Info.DriverName+d.Info.Name, "llvmpipe") && (!d.Info.SubgroupArithmetic || !fixed) {
		t.Errorf("on %s: subgroup arithmetic %v, reductions in subgroups of %d (sizes %d..%d); want arithmetic in fixed subgroups of %d",
			d.Info.Name, d.Info.SubgroupArithmetic, b.subgroupSize, d.Info.MinSubgroupSize, d.Info.MaxSubgroupSize, d.Info.SubgroupSize)
	}
	t.Setenv(noSubgroupEnv, "1")
	forced := NewBackendOn(d)
	defer forced.Close()
	for shared, sg := range subgroupVariants {
		k := Kernel{Shader: shared}
		want := shared
		if d.Info.SubgroupArithmetic {
			want = sg
		}
		if got := b.reduceKernel(k); got.Shader != want || got.profileName() != shared {
			t.Errorf("%s runs as %s (profiled as %s) on %s, want %s", shared, got.Shader, got.profileName(), d.Info.Name, want)
		}
		wantSize := uint32(0)
		if d.Info.SubgroupArithmetic {
			wantSize = pinnedSubgroupSize(d.Info, b.wg)
		}
		if got := b.reduceKernel(k).SubgroupSize; got != wantSize {
			t.Errorf("%s requires subgroups of %d, want %d", shared, got, wantSize)
		}
		if got := b.rowKernel(k); got.Shader != want || got.Local != [3]uint32{b.rowWG, 1, 1} {
			t.Errorf("row kernel %s runs as %s with workgroup %v, want %s with %d", shared, got.Shader, got.Local, want, b.rowWG)
		}
		if got := forced.reduceKernel(k); got.Shader != shared || got.SubgroupSize != 0 {
			t.Errorf("with %s=1, %s runs as %s in subgroups of %d", noSubgroupEnv, shared, got.Shader, got.SubgroupSize)
		}
		for _, name := range []string{shared, sg} {
			if _, err := shaders.Lookup(name); err != nil {
				t.Error(err)
			}
		}
	}
	if got := b.reduceKernel(kAdd).Shader; got != "add" {
		t.Errorf("add runs as %s", got)
	}
}

// TestNNParitySharedReductions runs every parity case of the fused ops and of the sums with
// the reductions forced onto their shared-memory variants, the path of devices without
// subgroup arithmetic (TestNNParityWithCPU runs the variants the device picks).
func TestNNParitySharedReductions(t *testing.T) {
	t.Setenv(noSubgroupEnv, "1")
	b := NewBackendOn(device(t))
	defer b.Close()
	if b.subgroupReduce {
		t.Fatalf("%s=1 leaves the subgroup variants on", noSubgroupEnv)
	}
	t.Run("NN", func(t *testing.T) { runNNCases(t, append(backendtest.NNCases(), backendtest.LlamaCases()...)) })
	t.Run("Sums", TestParityWithCPU)
}
