package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The cooperative-matrix kernels run only on devices with VK_NV_cooperative_matrix or
// VK_KHR_cooperative_matrix (Mesa 26's lavapipe has the KHR one, Mesa 25's neither): these tests
// skip elsewhere, saying why, even with VKGRAD_REQUIRE_VULKAN=1, since such a device lacks the
// feature rather than Vulkan; VKGRAD_REQUIRE_COOPMAT=1 fails them instead. Where they run, they
// run once per kernel the device runs (eachCoopMat).

// skipWithoutCoopMat skips a test that needs a cooperative-matrix kernel, or fails it under
// VKGRAD_REQUIRE_COOPMAT=1, which CI sets where it runs a driver that has one.
func skipWithoutCoopMat(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("VKGRAD_REQUIRE_COOPMAT") == "1" {
		t.Fatalf(format+" (VKGRAD_REQUIRE_COOPMAT=1)", args...)
	}
	t.Skipf(format, args...)
}

// coopMatBackend is a backend on the test device with the cooperative-matrix kernel on.
func coopMatBackend(t *testing.T) *Backend {
	t.Helper()
	vb := NewBackendOn(device(t))
	if err := vb.SetCoopMatMul(true); err != nil {
		vb.Close()
		skipWithoutCoopMat(t, "the cooperative-matrix matmul does not run here: %v", err)
	}
	t.Cleanup(func() { vb.Close() })
	return vb
}

// eachCoopMat runs f on a backend with the cooperative-matrix kernel on, in a subtest named
// after each kernel the device runs: its own (the NV one where it has that) and, where that is
// another, the KHR one, forced through VKGRAD_MATMUL_KERNEL.
func eachCoopMat(t *testing.T, f func(t *testing.T, vb *Backend)) {
	vb := coopMatBackend(t)
	t.Run(vb.dev.coopMat.name(), func(t *testing.T) { f(t, vb) })
	if vb.dev.coopMat.khr {
		return
	}
	t.Run(mmCoopMatKHRKernel, func(t *testing.T) {
		if vb.dev.coopMatKHR == nil {
			_, err := coopMatKHRKernelFor(vb.dev.Info)
			skipWithoutCoopMat(t, "no %s kernel here: %v", coopMatExtension, err)
		}
		t.Setenv("VKGRAD_MATMUL_KERNEL", mmCoopMatKHRKernel)
		if c := vb.coopMatKernel(); c == nil || !c.khr {
			t.Fatalf("VKGRAD_MATMUL_KERNEL=%s picked %+v", mmCoopMatKHRKernel, c)
		}
		f(t, vb)
	})
}

// coopMatCases are matmul_tiled's cases (odd shapes at the tile edges, every transpose,
// batches, bias, accumulation) and the products of a GPT-2 block at B=2, T=40, C=96.
func coopMatCases() []mmCase {
	const bt, C = 80, 96
	return append(mmTiledCases(),
		mmCase{M: bt, N: 3 * C, K: C, tb: true, bias: true},  // qkv forward
		mmCase{M: bt, N: C, K: 3 * C},                        // its input gradient
		mmCase{M: 3 * C, N: C, K: bt, ta: true},              // its weight gradient
		mmCase{M: bt, N: 4 * C, K: C, tb: true, bias: true},  // fc forward
		mmCase{M: C, N: 4 * C, K: bt, ta: true, accum: true}, // a weight gradient accumulated
		mmCase{M: 2, N: 50, K: C, tb: true},                  // lm head rows of two tokens
		mmCase{M: 40, N: 40, K: 16, batch: 6, tb: true},      // attention scores per head
		mmCase{M: 17, N: 33, K: 0, bias: true},               // no depth: the bias alone
	)
}

// coopMatRun multiplies host operands on be and returns out.
func coopMatRun(t *testing.T, be tensor.Backend, c mmCase, a, b, bias, out []float32) []float32 {
	t.Helper()
	var tb *tensor.Tensor
	if c.bias {
		tb = mustHost(t, be, bias)
	}
	o := mustHost(t, be, out)
	be.MatMul(o, mustHost(t, be, a), mustHost(t, be, b), tb, tensor.MatMulParams{M: c.M, N: c.N, K: c.K, TransA: c.ta, TransB: c.tb, Accumulate: c.accum, Batch: c.batch})
	return hostOf(t, be, o)
}

// hostOf copies x to the host.
func hostOf(t *testing.T, be tensor.Backend, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := tensor.ToHost(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// coopMatInputs are c's operands drawn by gen.
func coopMatInputs(c mmCase, gen func() float32) (a, b, bias, out []float32) {
	batch := max(c.batch, 1)
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = gen()
		}
		return v
	}
	return fill(batch * c.M * c.K), fill(batch * c.K * c.N), fill(c.N), fill(batch * c.M * c.N)
}

// TestCoopMatMulExact feeds operands that float16 holds exactly (multiples of 1/8 in
// [-1/2, 1/2]): every product is then exact, and so is every float32 sum (multiples of 1/64
// below 2^12 in magnitude), so the kernel must give the CPU's bits whatever its summation
// order. A wrong index, a lost edge row or a missing term cannot hide in a tolerance. Split-K
// and chunking run the same cases.
func TestCoopMatMulExact(t *testing.T) { eachCoopMat(t, testCoopMatMulExact) }

func testCoopMatMulExact(t *testing.T, vb *Backend) {
	cb := cpu.New()
	t.Cleanup(func() { mmForceSplits = 0 })
	r := rand.New(rand.NewPCG(29, 3))
	eighths := func() float32 { return float32(r.IntN(9)-4) / 8 }
	for _, splits := range []int{1, 3} {
		mmForceSplits = splits
		for _, c := range coopMatCases() {
			a, b, bias, out := coopMatInputs(c, eighths)
			var got []float32
			calls := mmRunKernels(t, vb, func() { got = coopMatRun(t, vb, c, a, b, bias, out) })
			if want := vb.coopMatKernel().name(); vb.dev.Info.TimestampBits > 0 && calls[want] == 0 {
				t.Fatalf("%v: kernels %v, want %s", c, calls, want)
			}
			assertExact(t, fmt.Sprintf("%v splits %d", c, splits), got, coopMatRun(t, cb, c, a, b, bias, out))
		}
	}
}

// TestCoopMatMulParity compares random normal operands with the CPU's float32 product. Each
// operand rounded to float16 is off by at most 2^-11 relative (2^-25 absolute below its normal
// range), so a product a·b by at most (2·2^-11 + 2^-22)|a||b|; the float32 sums of the two
// sides add at most (K+2)·2^-24 of S = Σ|a||b| + |bias| + |out| each, doubled for accumulators
// that truncate rather than round. Hence |got - want| ≤ (2^-10 + 2^-22)·S + 4(K+2)·2^-24·S
// + K·2^-25·max|x|.
func TestCoopMatMulParity(t *testing.T) { eachCoopMat(t, testCoopMatMulParity) }

func testCoopMatMulParity(t *testing.T, vb *Backend) {
	cb := cpu.New()
	r := rand.New(rand.NewPCG(29, 4))
	normal := func() float32 { return float32(r.NormFloat64()) }
	for _, c := range coopMatCases() {
		a, b, bias, out := coopMatInputs(c, normal)
		got, want := coopMatRun(t, vb, c, a, b, bias, out), coopMatRun(t, cb, c, a, b, bias, out)
		coopMatCheckTolerance(t, c, a, b, bias, out, got, want)
	}
}

func coopMatCheckTolerance(t *testing.T, c mmCase, a, b, bias, out, got, want []float32) {
	t.Helper()
	maxAbs := 0.0
	for _, v := range [][]float32{a, b} {
		for _, x := range v {
			maxAbs = math.Max(maxAbs, math.Abs(float64(x)))
		}
	}
	sums := c.public().TermSums(a, b, bias, out)
	for i, s := range sums {
		tol := (0x1p-10+0x1p-22)*s + 4*float64(c.K+2)*0x1p-24*s + float64(c.K)*0x1p-25*maxAbs
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			z, m, n := c.public().Position(i)
			t.Fatalf("%v: out[%d,%d,%d] = %g, cpu %g (|diff| %g > %g)", c, z, m, n, got[i], want[i], d, tol)
		}
	}
}

// TestCoopMatMulGeluAndDeterminism: the fused GELU epilogue gives the separate ops' bits on
// this kernel too, and a split-K product gives the same bits twice.
func TestCoopMatMulGeluAndDeterminism(t *testing.T) {
	eachCoopMat(t, testCoopMatMulGeluAndDeterminism)
}

func testCoopMatMulGeluAndDeterminism(t *testing.T, vb *Backend) {
	t.Cleanup(func() { mmForceSplits = 0 })
	for i, c := range backendtest.MatMulGeluCases() {
		mmGeluCheck(t, vb, c, uint64(70+i))
	}
	mmForceSplits = 4
	c := mmCase{M: 70, N: 36, K: 1000, tb: true, bias: true, accum: true, batch: 2}
	assertExact(t, "split-K rerun", mmRunOnce(t, vb, c, 7), mmRunOnce(t, vb, c, 7))
}

// TestCoopMatMulChoice: the kernel is off by default, SetCoopMatMul turns it on or says why
// the device cannot run it, and VKGRAD_MATMUL_KERNEL overrides only where it can run.
func TestCoopMatMulChoice(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	t.Setenv("VKGRAD_MATMUL_KERNEL", "")
	if got := vb.mmShader(); got == mmCoopMatKernel {
		t.Fatalf("default kernel %s: float32 products must stay float32 unless asked", got)
	}
	desc, whyNot := vb.CoopMatMul()
	err := vb.SetCoopMatMul(true)
	defer vb.SetCoopMatMul(false)
	t.Setenv("VKGRAD_MATMUL_KERNEL", mmCoopMatKernel)
	forced := vb.mmShader()
	if whyNot != nil {
		if err == nil || !strings.Contains(err.Error(), whyNot.Error()) {
			t.Fatalf("SetCoopMatMul(true) on %s: %v, want the reason %v", vb.dev.Info.Name, err, whyNot)
		}
		if forced == mmCoopMatKernel {
			t.Fatalf("VKGRAD_MATMUL_KERNEL=%s chose it on %s, which cannot run it", mmCoopMatKernel, vb.dev.Info.Name)
		}
		t.Logf("%s: %v", vb.dev.Info.Name, whyNot)
		return
	}
	if err != nil || forced != mmCoopMatKernel {
		t.Fatalf("%s runs %s but SetCoopMatMul says %v and the override picks %s", vb.dev.Info.Name, desc, err, forced)
	}
	t.Setenv("VKGRAD_MATMUL_KERNEL", "matmul_tiled")
	if got := vb.mmShader(); got != "matmul_tiled" {
		t.Fatalf("VKGRAD_MATMUL_KERNEL=matmul_tiled picked %s with the cooperative-matrix kernel on", got)
	}
}

// TestCoopMatKernelFor checks the conditions of the kernel on made-up devices.
func TestCoopMatKernelFor(t *testing.T) {
	f16 := CoopMatShape{M: 16, N: 16, K: 16, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	nv := DeviceInfo{Name: "nv", CoopMatNVShapes: []CoopMatShape{f16}, Float16: true, VulkanMemoryModel: true, SubgroupSize: 32,
		MinSubgroupSize: 32, MaxSubgroupSize: 32, MaxComputeWorkgroupSubgroups: 32, MaxComputeWorkGroupInvocations: 1024,
		MaxComputeWorkGroupSize: [3]uint32{1024, 1024, 64}, MaxComputeSharedMemorySize: 48 << 10}
	c, err := coopMatKernelFor(nv)
	// 128x128 tiles 32 deep from 2x4 subgroups of 4x2 accumulators; shared memory: A and B
	// as 128 rows of 32+8 halves (10 KiB each) and 8 subgroups' 16x16 float32 accumulator.
	if err != nil || c.pin != 32 || c.local() != 256 || c.tile() != (mmTile{BM: 128, BN: 128, BK: 32, TM: 16, TN: 16}) || c.sharedBytes() != 28<<10 {
		t.Fatalf("on an NVIDIA-like device: %+v (tile %v, %d bytes), %v", c, c.tile(), c.sharedBytes(), err)
	}
	small := nv
	small.MaxComputeSharedMemorySize = 16 << 10 // the second blocking: 64x64x16 from 2x2 subgroups
	if c, err := coopMatKernelFor(small); err != nil || c.local() != 128 || c.tile() != (mmTile{BM: 64, BN: 64, BK: 16, TM: 16, TN: 16}) || c.sharedBytes() != 10<<10 {
		t.Errorf("with 16 KiB of shared memory: %+v (tile %v, %d bytes), %v", c, c.tile(), c.sharedBytes(), err)
	}
	narrow := nv // a 16x8x16 shape: twice the accumulators along N keep the tile square
	narrow.CoopMatNVShapes = []CoopMatShape{{M: 16, N: 8, K: 16, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}}
	if c, err := coopMatKernelFor(narrow); err != nil || c.grid != (coopMatGrid{WM: 4, WN: 4, SGM: 2, SGN: 4, KSteps: 2}) || c.tile().BN != 128 {
		t.Errorf("16x8x16 shape: %+v, %v", c, err)
	}
	t.Setenv(coopMatGridEnv, "2x2/2x2/1")
	if c, err := coopMatKernelFor(nv); err != nil || c.tile() != (mmTile{BM: 64, BN: 64, BK: 16, TM: 16, TN: 16}) {
		t.Errorf("%s=2x2/2x2/1: %+v, %v", coopMatGridEnv, c, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/1x1/1") // 16x16x16 by 32 invocations: 8 elements each, evenly
	if _, err := coopMatKernelFor(nv); err != nil {
		t.Errorf("%s=1x1/1x1/1: %v", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/2x2/1") // 32x32x16 by 128 invocations: 4 each, evenly
	if _, err := coopMatKernelFor(nv); err != nil {
		t.Errorf("%s=1x1/2x2/1: %v", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/8x4/1") // 128x64x16 by 1024 invocations: 2048 and 1024 elements
	if _, err := coopMatKernelFor(nv); err != nil {
		t.Errorf("%s=1x1/8x4/1: %v", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/4x8/1") // 64x128x16 by 1024 invocations: A's 1024 staged evenly, yes
	if _, err := coopMatKernelFor(nv); err != nil {
		t.Errorf("%s=1x1/4x8/1: %v", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/2x1/1") // 32x16x16 by 64 invocations: B's 256 elements are 4 each; A's 512 are 8
	if _, err := coopMatKernelFor(nv); err != nil {
		t.Errorf("%s=1x1/2x1/1: %v", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "1x1/16x2/1") // 256x32x16 by 1024: B's 512 elements do not split over 1024
	if _, err := coopMatKernelFor(nv); err == nil || !strings.Contains(err.Error(), "evenly") {
		t.Errorf("%s=1x1/16x2/1: error %v, want one saying the tile is not staged evenly", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "4x2")
	if _, err := coopMatKernelFor(nv); err == nil || !strings.Contains(err.Error(), coopMatGridEnv) {
		t.Errorf("%s=4x2: error %v, want one naming the variable", coopMatGridEnv, err)
	}
	t.Setenv(coopMatGridEnv, "")
	for _, bad := range []struct {
		why  string
		edit func(*DeviceInfo)
	}{
		{"lacks VK_NV_cooperative_matrix", func(d *DeviceInfo) { d.CoopMatNVShapes, d.CoopMatShapes = nil, []CoopMatShape{f16} }},
		{"no subgroup f16", func(d *DeviceInfo) {
			d.CoopMatNVShapes = []CoopMatShape{{M: 16, N: 16, K: 32, A: ComponentSint8, B: ComponentSint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup}}
		}},
		{"lacks shaderFloat16", func(d *DeviceInfo) { d.Float16 = false }},
		{"lacks vulkanMemoryModel", func(d *DeviceInfo) { d.VulkanMemoryModel = false }},
		{"varies its subgroup size", func(d *DeviceInfo) { d.MinSubgroupSize, d.MaxComputeWorkgroupSubgroups = 16, 0 }},
		{"shared memory", func(d *DeviceInfo) { d.MaxComputeSharedMemorySize = 8 << 10 }},
	} {
		d := nv
		bad.edit(&d)
		if _, err := coopMatKernelFor(d); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("%s: error %v, want one saying %q", bad.why, err, bad.why)
		}
	}
}

// TestCoopMatCreation: a device is opened with the KHR feature where it reports KHR shapes,
// with what the kernel needs only where the kernel can run, and with nothing more otherwise.
func TestCoopMatCreation(t *testing.T) {
	f16 := CoopMatShape{M: 16, N: 16, K: 16, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	nv := DeviceInfo{Name: "nv", CoopMatShapes: []CoopMatShape{f16}, CoopMatNVShapes: []CoopMatShape{f16}, Float16: true, VulkanMemoryModel: true,
		SubgroupSize: 32, MaxComputeWorkGroupInvocations: 1024, MaxComputeWorkGroupSize: [3]uint32{1024, 1024, 64}, MaxComputeSharedMemorySize: 48 << 10,
		APIVersion: apiVersion(1, 1, 0)}
	base := []string{"VK_EXT_subgroup_size_control"}
	_, exts, cm, ok := coopMatCreation(nv, nil, base, apiVersion(1, 3, 0))
	want := "VK_EXT_subgroup_size_control VK_KHR_cooperative_matrix VK_NV_cooperative_matrix VK_KHR_vulkan_memory_model VK_KHR_shader_float16_int8"
	if !ok || cm == nil || strings.Join(exts, " ") != want || len(base) != 1 {
		t.Errorf("Vulkan 1.1 NVIDIA-like device: ok %v kernel %v extensions %v (base %v), want %s", ok, cm, exts, base, want)
	}
	khrOnly := nv // the KHR kernel, with what it declares but the NV extension
	khrOnly.CoopMatNVShapes = nil
	want = "VK_KHR_cooperative_matrix VK_KHR_vulkan_memory_model VK_KHR_shader_float16_int8"
	if _, exts, cm, ok := coopMatCreation(khrOnly, nil, nil, apiVersion(1, 3, 0)); !ok || cm == nil || !cm.khr || strings.Join(exts, " ") != want {
		t.Errorf("KHR-only device: ok %v kernel %v extensions %v, want %s", ok, cm, exts, want)
	}
	khrInt8 := khrOnly // KHR shapes, none of them fp16: the KHR feature alone
	khrInt8.CoopMatShapes = []CoopMatShape{{M: 16, N: 16, K: 32, A: ComponentSint8, B: ComponentSint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup}}
	if _, exts, cm, ok := coopMatCreation(khrInt8, nil, nil, apiVersion(1, 3, 0)); !ok || cm != nil || strings.Join(exts, " ") != coopMatExtension {
		t.Errorf("KHR device without fp16 shapes: ok %v kernel %v extensions %v", ok, cm, exts)
	}
	if _, exts, cm, ok := coopMatCreation(DeviceInfo{}, nil, base, apiVersion(1, 3, 0)); ok || cm != nil || len(exts) != 1 {
		t.Errorf("device without cooperative matrices: ok %v kernel %v extensions %v", ok, cm, exts)
	}
}

// TestPeakCoopMat: the cooperative-matrix probe runs where the kernel does and reports a rate
// above the float32 one (the matrix units' reason to exist), and says why not elsewhere. Where
// the device runs both kernels, the KHR probe runs too.
func TestPeakCoopMat(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	testPeakCoopMat(t, vb)
	if vb.dev.coopMatKHR != nil && vb.dev.coopMatKHR != vb.dev.coopMat {
		t.Run(mmCoopMatKHRKernel, func(t *testing.T) {
			t.Setenv("VKGRAD_MATMUL_KERNEL", mmCoopMatKHRKernel)
			testPeakCoopMat(t, vb)
		})
	}
}

func testPeakCoopMat(t *testing.T, vb *Backend) {
	g, err := vb.PeakCoopMatGFLOPS()
	if vb.dev.coopMat == nil {
		if err == nil {
			t.Fatalf("%s has no cooperative-matrix kernel, yet the probe measured %g GFLOP/s", vb.dev.Info.Name, g)
		}
		skipWithoutCoopMat(t, "no cooperative-matrix rate here: %v", err)
	}
	f32, err2 := vb.PeakGFLOPS()
	if err != nil || err2 != nil || !(g > f32) {
		t.Fatalf("cooperative-matrix rate %g GFLOP/s (%v), float32 %g (%v)", g, err, f32, err2)
	}
	t.Logf("cooperative-matrix rate %.0f GFLOP/s, float32 %.0f", g, f32)
}

// coopMatDevice is a made-up GPU with the subgroup and workgroup limits the kernels need and
// the given shapes of each extension.
func coopMatDevice(name string, khr, nv []CoopMatShape) DeviceInfo {
	return DeviceInfo{Name: name, CoopMatShapes: khr, CoopMatNVShapes: nv, Float16: true, VulkanMemoryModel: true, SubgroupSize: 32,
		MinSubgroupSize: 32, MaxSubgroupSize: 32, MaxComputeWorkgroupSubgroups: 32, MaxComputeWorkGroupInvocations: 1024,
		MaxComputeWorkGroupSize: [3]uint32{1024, 1024, 64}, MaxComputeSharedMemorySize: 48 << 10}
}

// TestSelectCoopMatKernel: which cooperative-matrix kernel made-up devices take. The NV one
// where the device runs it (it is the one measured), the KHR one on devices with only that
// extension (AMD RDNA3, Intel Arc), whose shape it is specialised for, and none, saying why
// for both extensions, elsewhere.
func TestSelectCoopMatKernel(t *testing.T) {
	t.Setenv(coopMatGridEnv, "")
	shape := func(m, n, k uint32) CoopMatShape {
		return CoopMatShape{M: m, N: n, K: k, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	}
	s8 := CoopMatShape{M: 16, N: 16, K: 32, A: ComponentSint8, B: ComponentSint8, C: ComponentSint32, Result: ComponentSint32, Scope: ScopeSubgroup}
	f16 := shape(16, 16, 16)
	amd := coopMatDevice("rdna3", []CoopMatShape{s8, f16}, nil)
	amd.SubgroupSize, amd.MaxSubgroupSize = 64, 64 // wave64 by default, wave32 on request
	intel := coopMatDevice("arc", []CoopMatShape{shape(8, 16, 16)}, nil)
	intel.SubgroupSize, intel.MinSubgroupSize = 16, 8
	for _, c := range []struct {
		name       string
		info       DeviceInfo
		def        string // the kernel the device's products take, "" for none
		shape      CoopMatShape
		khr        bool   // whether it has a KHR kernel
		sg         uint32 // the subgroup size the kernel fixes
		whyNot     []string
		vec4, kern string // the kernels' shaders
	}{
		{name: "H200", info: coopMatDevice("h200", []CoopMatShape{f16}, []CoopMatShape{f16}), def: mmCoopMatKernel, shape: f16, khr: true, sg: 32},
		{name: "NV only", info: coopMatDevice("nv", nil, []CoopMatShape{f16}), def: mmCoopMatKernel, shape: f16, sg: 32},
		{name: "RDNA3", info: amd, def: mmCoopMatKHRKernel, shape: f16, khr: true, sg: 32}, // wave32, not the default wave64
		{name: "Arc", info: intel, def: mmCoopMatKHRKernel, shape: shape(8, 16, 16), khr: true, sg: 8},
		{name: "KHR int8 only", info: coopMatDevice("i8", []CoopMatShape{s8}, nil),
			whyNot: []string{"i8 lacks " + coopMatNVExtension, "no subgroup f16*f16+f32->f32"}},
		{name: "lavapipe", info: DeviceInfo{Name: "llvmpipe", Float16: true, SubgroupSize: 8},
			whyNot: []string{"llvmpipe lacks " + coopMatNVExtension, "llvmpipe lacks " + coopMatExtension}},
	} {
		def, khr, err := coopMatKernels(c.info)
		if c.def == "" {
			for _, why := range c.whyNot {
				if def != nil || khr != nil || err == nil || !strings.Contains(err.Error(), why) {
					t.Errorf("%s: kernel %+v, KHR %+v, error %v, want none saying %q", c.name, def, khr, err, why)
				}
			}
			continue
		}
		if err != nil || def == nil || def.name() != c.def || def.shape != c.shape || (khr != nil) != c.khr || def.pin != c.sg || def.sg != c.sg || def.local() != 8*c.sg {
			t.Errorf("%s: kernel %+v, KHR %+v, error %v; want %s of %v (KHR kernel %v)", c.name, def, khr, err, c.def, c.shape, c.khr)
			continue
		}
		if khr != nil && (!khr.khr || khr.shape != c.shape) {
			t.Errorf("%s: KHR kernel %+v", c.name, khr)
		}
		k := def.kernel(false)
		if k.Shader != c.def || k.Op != c.def || k.Spec[0] != c.shape.M || k.Spec[1] != c.shape.N || k.Spec[2] != c.shape.K {
			t.Errorf("%s: scalar kernel %+v", c.name, k)
		}
		if k := def.kernel(true); k.Shader != c.def+"_vec4" || k.Op != c.def {
			t.Errorf("%s: vec4 kernel %+v", c.name, k)
		}
	}
}

// TestSelectCoopMatShader: the product's kernel on made-up devices, in fp16 and with
// VKGRAD_MATMUL_KERNEL forcing either cooperative-matrix kernel.
func TestSelectCoopMatShader(t *testing.T) {
	f16 := CoopMatShape{M: 16, N: 16, K: 16, A: ComponentFloat16, B: ComponentFloat16, C: ComponentFloat32, Result: ComponentFloat32, Scope: ScopeSubgroup}
	t.Setenv(mmTileEnv, "")
	t.Setenv(coopMatGridEnv, "")
	backend := func(info DeviceInfo) *Backend {
		d := &Device{Info: info}
		d.coopMat, d.coopMatKHR, d.coopMatErr = coopMatKernels(info)
		b := &Backend{dev: d}
		if err := b.SetProductPrecision(tensor.FP16); err != nil {
			t.Fatal(err)
		}
		return b
	}
	both := backend(coopMatDevice("h200", []CoopMatShape{f16}, []CoopMatShape{f16}))
	khrOnly := backend(coopMatDevice("rdna3", []CoopMatShape{f16}, nil))
	nvOnly := backend(coopMatDevice("nv", nil, []CoopMatShape{f16}))
	for _, c := range []struct {
		env      string
		b        *Backend
		shader   string
		khr      bool // the kernel the shader stands for
		describe string
	}{
		{"", both, mmCoopMatKernel, false, "matmul_coopmat: 16x16x16"},
		{mmCoopMatKernel, both, mmCoopMatKernel, false, "matmul_coopmat: "},
		{mmCoopMatKHRKernel, both, mmCoopMatKHRKernel, true, "matmul_coopmat_khr: 16x16x16"},
		{"", khrOnly, mmCoopMatKernel, true, "matmul_coopmat_khr: "},
		{mmCoopMatKernel, khrOnly, mmCoopMatKernel, true, "matmul_coopmat_khr: "},
		{mmCoopMatKHRKernel, khrOnly, mmCoopMatKHRKernel, true, "matmul_coopmat_khr: "},
		{mmCoopMatKHRKernel, nvOnly, mmCoopMatKernel, false, "matmul_coopmat: "}, // no KHR kernel to force
	} {
		t.Setenv("VKGRAD_MATMUL_KERNEL", c.env)
		got := c.b.mmShader()
		cm := c.b.coopMatFor(got)
		desc, err := c.b.CoopMatMul()
		if got != c.shader || cm == nil || cm.khr != c.khr || err != nil || !strings.HasPrefix(desc, c.describe) {
			t.Errorf("%s with VKGRAD_MATMUL_KERNEL=%q: %s (KHR %v), %q %v; want %s (KHR %v), %q", c.b.dev.Info.Name, c.env, got, cm != nil && cm.khr, desc, err, c.shader, c.khr, c.describe)
		}
		if k := (mmKernel{shader: got}); !k.coopMat() || !k.tiled() {
			t.Errorf("%s is not taken for a cooperative-matrix kernel", got)
		}
	}
	t.Setenv("VKGRAD_MATMUL_KERNEL", mmCoopMatKHRKernel)
	if err := both.SetProductPrecision(tensor.FP32); err != nil {
		t.Fatal(err)
	}
	if got := both.mmShader(); got != mmCoopMatKHRKernel {
		t.Errorf("fp32 with VKGRAD_MATMUL_KERNEL=%s: %s", mmCoopMatKHRKernel, got)
	}
}
