package vk

import (
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
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

// TestReduceKernelVariant checks that reductions run their subgroup variants where the device
// has subgroup arithmetic (lavapipe has), that VKGRAD_NO_SUBGROUP=1 keeps them on shared
// memory, that kernels without a reduction keep their shader, and that every variant in the
// table is embedded. Profiles name the kernel, whichever variant runs.
func TestReduceKernelVariant(t *testing.T) {
	d := device(t)
	if strings.Contains(d.Info.DriverName+d.Info.Name, "llvmpipe") && !d.Info.SubgroupArithmetic {
		t.Errorf("%s reports no subgroup arithmetic in compute shaders", d.Info.Name)
	}
	t.Setenv(noSubgroupEnv, "")
	b := NewBackendOn(d)
	defer b.Close()
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
		if got := b.rowKernel(k); got.Shader != want || got.Local != [3]uint32{b.rowWG, 1, 1} {
			t.Errorf("row kernel %s runs as %s with workgroup %v, want %s with %d", shared, got.Shader, got.Local, want, b.rowWG)
		}
		if got := forced.reduceKernel(k).Shader; got != shared {
			t.Errorf("with %s=1, %s runs as %s", noSubgroupEnv, shared, got)
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
	t.Run("NN", func(t *testing.T) { runNNCases(t, append(nnCases(), llamaCases()...)) })
	t.Run("Sums", TestParityWithCPU)
}
