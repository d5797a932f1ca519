package vk

import (
	"reflect"
	"strings"
	"testing"
)

// TestCoopMatLayoutMatchesSpec checks the cooperative-matrix mirrors against the layout the
// Vulkan spec gives them on 64-bit targets, for headers too old to compare with (Debian
// bookworm's 1.3.239): sType, 4 bytes of padding, pNext, then 32-bit fields.
func TestCoopMatLayoutMatchesSpec(t *testing.T) {
	if reflect.TypeOf(uintptr(0)).Size() != 8 {
		t.Skip("the layout below is the 64-bit one")
	}
	cases := []struct {
		v    any
		size uintptr
	}{
		{physicalDeviceCooperativeMatrixFeaturesKHR{}, 24},
		{physicalDeviceCooperativeMatrixPropertiesKHR{}, 24},
		{cooperativeMatrixPropertiesKHR{}, 56},
	}
	for _, c := range cases {
		rt := reflect.TypeOf(c.v)
		if rt.Size() != c.size || rt.Align() != 8 {
			t.Errorf("%s: size %d align %d, want %d and 8", rt.Name(), rt.Size(), rt.Align(), c.size)
		}
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			want := uintptr(16 + 4*(i-2))
			switch i {
			case 0:
				want = 0
			case 1:
				want = 8
			}
			if f.Offset != want {
				t.Errorf("%s.%s at offset %d, want %d", rt.Name(), f.Name, f.Offset, want)
			}
		}
	}
}

func TestCoopMatShapeForPrefers16x16x16(t *testing.T) {
	f16 := func(m, n, k uint32) CoopMatShape {
		return CoopMatShape{M: m, N: n, K: k, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	}
	f16acc := f16(16, 16, 16)
	f16acc.C, f16acc.Result = ComponentFloat16, ComponentFloat16
	s8 := CoopMatShape{M: 16, N: 16, K: 32, A: ComponentSint8, B: ComponentSint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup}
	// What NVIDIA's driver enumerates on Ada/Hopper, in its order, plus one workgroup shape.
	nv := []CoopMatShape{f16(16, 8, 16), f16(16, 8, 8), f16acc, f16(16, 16, 16), s8}
	if s, ok := CoopMatShapeFor(nv, ComponentFloat16); !ok || s != f16(16, 16, 16) {
		t.Errorf("picked %v (ok %v), want 16x16x16 f16*f16+f32->f32 subgroup", s, ok)
	}
	// Without 16x16x16 the smallest fp32-accumulating shape is taken.
	if s, ok := CoopMatShapeFor([]CoopMatShape{f16(16, 8, 16), f16(16, 8, 8)}, ComponentFloat16); !ok || s != f16(16, 8, 8) {
		t.Errorf("picked %v (ok %v), want 16x8x8", s, ok)
	}
	// Saturating, workgroup-scope, fp16-accumulating and bf16 shapes do not serve fp16 in.
	sat := f16(16, 16, 16)
	sat.SaturatingAccumulation = true
	wg := f16(16, 16, 16)
	wg.Scope = ScopeWorkgroup
	if s, ok := CoopMatShapeFor([]CoopMatShape{sat, wg, f16acc, s8}, ComponentFloat16); ok {
		t.Errorf("picked %v from shapes none of which fits", s)
	}
	if _, ok := CoopMatShapeFor(nv, ComponentBfloat16); ok {
		t.Error("picked a bf16 shape from a device that enumerates none")
	}
	if _, ok := CoopMatShapeFor(nil, ComponentFloat16); ok {
		t.Error("picked a shape from a device without cooperative matrices")
	}
}

func TestDescribeReportsCoopMatShapes(t *testing.T) {
	d := DeviceInfo{Name: "test", CoopMatShapes: []CoopMatShape{
		{M: 16, N: 16, K: 16, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup},
		{M: 16, N: 16, K: 16, A: ComponentBfloat16, B: ComponentBfloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup},
		{M: 16, N: 16, K: 32, A: ComponentSint8, B: ComponentUint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup, SaturatingAccumulation: true},
	}}
	want := "  coopmat   16x16x16 f16*f16+f32->f32 subgroup, 16x16x16 bf16*bf16+f32->f32 subgroup, 16x16x32 s8*u8+s32->s32 subgroup saturating\n"
	if got := Describe(d); !strings.Contains(got, want) {
		t.Errorf("Describe lacks the shapes line %q:\n%s", want, got)
	}
	d.CoopMatNVShapes, d.Float16, d.VulkanMemoryModel, d.SubgroupSize = d.CoopMatShapes[:1], true, true, 32
	d.MaxComputeWorkGroupInvocations, d.MaxComputeWorkGroupSize[0], d.MaxComputeSharedMemorySize = 1024, 1024, 48<<10
	got := Describe(d)
	for _, want := range []string{
		"  coopmatNV 16x16x16 f16*f16+f32->f32 subgroup\n",
		"  matmul    matmul_coopmat available: 16x16x16 f16*f16+f32->f32 subgroup, tile 128x128x32/16x16, workgroup 256 (VKGRAD_MATMUL_KERNEL=matmul_coopmat)\n",
		"  matmul    matmul_coopmat_khr available: 16x16x16 f16*f16+f32->f32 subgroup, tile 128x128x32/16x16, workgroup 256 (VKGRAD_MATMUL_KERNEL=matmul_coopmat_khr)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe lacks %q:\n%s", want, got)
		}
	}
	d.CoopMatShapes, d.CoopMatNVShapes = nil, nil
	if got := Describe(d); !strings.Contains(got, "  coopmat   none (VK_KHR_cooperative_matrix absent or off for compute)\n") {
		t.Errorf("Describe of a device without cooperative matrices:\n%s", got)
	}
}

// TestDeviceCoopMatMatchesExtension checks, on the test device, that shapes are reported
// exactly when the driver exposes VK_KHR_cooperative_matrix, and that a device reporting them
// opens with the extension enabled (lavapipe 25.0 has none: the first half then runs alone).
func TestDeviceCoopMatMatchesExtension(t *testing.T) {
	dev, _, err := OpenDevice(testDeviceSpec())
	requireVulkan(t, err)
	defer dev.Close()
	info := dev.Info
	if !info.extensions[coopMatExtension] && len(info.CoopMatShapes) > 0 {
		t.Errorf("%s reports cooperative-matrix shapes %v without %s", info.Name, info.CoopMatShapes, coopMatExtension)
	}
	for _, s := range info.CoopMatShapes {
		if s.M == 0 || s.N == 0 || s.K == 0 {
			t.Errorf("%s enumerates an empty shape %v", info.Name, s)
		}
	}
	if len(info.CoopMatShapes) == 0 {
		t.Logf("%s has no cooperative matrices for compute (extension present: %v)", info.Name, info.extensions[coopMatExtension])
		return
	}
	t.Logf("%s: %s", info.Name, describeCoopMat(info.CoopMatShapes))
}
