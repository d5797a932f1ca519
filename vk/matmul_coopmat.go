package vk

import (
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/tensor"
)

// mmCoopMat is the cooperative-matrix matmul kernel (shaders/matmul_coopmat.comp, or
// matmul_coopmat_khr.comp where khr) as a device runs it: the LM x LN x LK product its
// subgroups issue, how many of them each subgroup owns and how the subgroups tile the
// workgroup.
type mmCoopMat struct {
	shape CoopMatShape
	grid  coopMatGrid
	sg    uint32 // subgroup size
	pin   uint32 // the subgroup size required at pipeline creation, 0 where it cannot be
	khr   bool   // VK_KHR_cooperative_matrix, else VK_NV_cooperative_matrix
}

// coopMatGrid is the kernel's blocking: each subgroup owns WM x WN accumulators, the workgroup
// holds SGM x SGN subgroups, and each step stages KSteps products' depth of both operands.
type coopMatGrid struct{ WM, WN, SGM, SGN, KSteps int }

func (g coopMatGrid) String() string {
	return fmt.Sprintf("%dx%d/%dx%d/%d", g.WM, g.WN, g.SGM, g.SGN, g.KSteps)
}

const (
	// mmCoopMatKernel is the device's cooperative-matrix kernel for VKGRAD_MATMUL_KERNEL and
	// mmShader, whichever extension it runs on, and the name of the NV kernel's shader;
	// mmCoopMatKHRKernel is the KHR kernel, forced where the device would run the NV one.
	mmCoopMatKernel    = "matmul_coopmat"
	mmCoopMatKHRKernel = "matmul_coopmat_khr"
	// coopMatGridEnv sets the blocking as WMxWN/SGMxSGN/KSTEPS, to compare blockings on a device.
	coopMatGridEnv = "VKGRAD_COOPMAT_GRID"
)

// coopMatGrids are the blockings tried in order for a shape. The first gives 128 x 128 tiles
// 32 deep from 8 subgroups of 64 x 32 outputs each, a warp tile in the range where NVIDIA's
// matrix units are fed from shared memory without stalling on it (each A fragment feeds two
// products, each B fragment four) while 8 accumulators leave registers for the staged
// operands; the second halves everything for devices with less shared memory or smaller
// workgroups.
func coopMatGrids(s CoopMatShape) []coopMatGrid {
	m, n, k := int(s.M), int(s.N), int(s.K)
	return []coopMatGrid{
		{WM: max(1, 64/m), WN: max(1, 32/n), SGM: 2, SGN: 4, KSteps: max(1, 32/k)},
		{WM: max(1, 32/m), WN: max(1, 32/n), SGM: 2, SGN: 2, KSteps: 1},
	}
}

// parseCoopMatGrid reads a blocking written as WMxWN/SGMxSGN/KSTEPS.
func parseCoopMatGrid(v string) (coopMatGrid, error) {
	var g coopMatGrid
	if _, err := fmt.Sscanf(v, "%dx%d/%dx%d/%d", &g.WM, &g.WN, &g.SGM, &g.SGN, &g.KSteps); err != nil || g.WM < 1 || g.WN < 1 || g.SGM < 1 || g.SGN < 1 || g.KSteps < 1 {
		return g, fmt.Errorf("%s=%q: want WMxWN/SGMxSGN/KSTEPS of positive counts, e.g. 4x2/2x4/2", coopMatGridEnv, v)
	}
	return g, nil
}

// tile is the kernel's output tile and depth step, for the chunking and split-K planning it
// shares with matmul_tiled.
func (c mmCoopMat) tile() mmTile {
	m, n := int(c.shape.M), int(c.shape.N)
	return mmTile{BM: c.grid.SGM * c.grid.WM * m, BN: c.grid.SGN * c.grid.WN * n, BK: c.grid.KSteps * int(c.shape.K), TM: m, TN: n}
}

func (c mmCoopMat) local() uint32 { return uint32(c.grid.SGM*c.grid.SGN) * c.sg }

// name is c's shader, without the _vec4 of its vector variant: what profiles call it.
func (c mmCoopMat) name() string {
	if c.khr {
		return mmCoopMatKHRKernel
	}
	return mmCoopMatKernel
}

// extension is the Vulkan extension c runs on.
func (c mmCoopMat) extension() string {
	if c.khr {
		return coopMatExtension
	}
	return coopMatNVExtension
}

// coopMatPad is the shader's padding of each staged row, in float16 elements.
const coopMatPad = 8

// sharedBytes is the shared memory the kernel declares: both float16 operand tiles in the
// larger of their two orientations, and one float32 accumulator per subgroup.
func (c mmCoopMat) sharedBytes() int {
	t := c.tile()
	staged := func(rows, cols int) int { return 2 * max(rows*(cols+coopMatPad), cols*(rows+coopMatPad)) }
	return staged(t.BM, t.BK) + staged(t.BN, t.BK) + 4*c.grid.SGM*c.grid.SGN*t.TM*t.TN
}

// kernel is the kernel specialised for c, reading vec4s where the operands allow (mmVec4) and
// every invocation stages whole vec4s of both tiles.
func (c mmCoopMat) kernel(vec4 bool) Kernel {
	g := c.grid
	t := c.tile()
	name := c.name()
	if nt := int(c.local()); vec4 && (t.BM*t.BK)%(4*nt) == 0 && (t.BK*t.BN)%(4*nt) == 0 {
		name += "_vec4"
	}
	return Kernel{Shader: name, Op: c.name(), Bindings: 5, Push: 18, Local: [3]uint32{c.local(), 1, 1},
		Spec:         [maxSpec]uint32{c.shape.M, c.shape.N, c.shape.K, uint32(g.WM), uint32(g.WN), uint32(g.SGM), uint32(g.SGN), uint32(g.KSteps)},
		SubgroupSize: c.pin}
}

// coopMatKernels are the cooperative-matrix kernels a device can run: def, the one its fp16
// products take, and khr, the VK_KHR_cooperative_matrix one (nil where it cannot run it),
// or err saying why it can run neither. def is the NV kernel where the device runs both: that
// is the one measured (on an H200), and both reach the same tensor cores there; the KHR kernel
// serves AMD RDNA3 and Intel Arc, which have only the KHR extension.
func coopMatKernels(info DeviceInfo) (def, khr *mmCoopMat, err error) {
	nv, nvErr := coopMatKernelFor(info)
	k, khrErr := coopMatKHRKernelFor(info)
	if khrErr == nil {
		khr = &k
	}
	switch {
	case nvErr == nil:
		return &nv, khr, nil
	case khrErr == nil:
		return khr, khr, nil
	}
	return nil, nil, fmt.Errorf("%v; %v", nvErr, khrErr)
}

// coopMatKernelFor is the VK_NV_cooperative_matrix kernel a device can run, or why it cannot
// (see coopMatKernelOn).
func coopMatKernelFor(info DeviceInfo) (mmCoopMat, error) {
	return coopMatKernelOn(info, info.CoopMatNVShapes, false)
}

// coopMatKHRKernelFor is the VK_KHR_cooperative_matrix kernel a device can run, or why it
// cannot (see coopMatKernelOn). Its subgroups are the smallest the device can fix: the
// extension does not say which size its matrices need, and the smallest is the one they need
// on the devices that have it (32 on AMD RDNA3, whose default is 64; 8 on Intel Arc A-series,
// 16 on Xe2; NVIDIA's only one, 32).
func coopMatKHRKernelFor(info DeviceInfo) (mmCoopMat, error) {
	if info.MinSubgroupSize > 0 {
		info.SubgroupSize = info.MinSubgroupSize
	}
	return coopMatKernelOn(info, info.CoopMatShapes, true)
}

// coopMatKernelOn is the cooperative-matrix kernel of one extension (khr, else NV), whose
// shapes the device enumerates, or why the device cannot run it: it needs a subgroup-scope
// fp16 x fp16 + fp32 shape, the shaderFloat16 and vulkanMemoryModel features (both kernels'
// SPIR-V declares the Vulkan memory model), and a subgroup size that does not vary, since the
// shader's blocking counts its subgroups. The shape's sizes reach the shader as specialization
// constants, so one SPIR-V serves 16x16x16 (NVIDIA, AMD RDNA3), 8x16x16 or 8x8x16 (Intel) alike.
// The blocking is VKGRAD_COOPMAT_GRID's where set, else the first of coopMatGrids the device
// has room for.
func coopMatKernelOn(info DeviceInfo, shapes []CoopMatShape, khr bool) (mmCoopMat, error) {
	c := mmCoopMat{khr: khr}
	shape, ok := CoopMatShapeFor(shapes, ComponentFloat16)
	switch {
	case len(shapes) == 0:
		return c, fmt.Errorf("%s lacks %s", info.Name, c.extension())
	case !ok:
		return c, fmt.Errorf("%s enumerates no subgroup f16*f16+f32->f32 cooperative matrix", info.Name)
	case shape.N%8 != 0 || shape.K%8 != 0 || shape.M%8 != 0:
		return c, fmt.Errorf("%s's cooperative matrix %v has rows of other than 16-byte multiples", info.Name, shape)
	case !info.Float16:
		return c, fmt.Errorf("%s lacks shaderFloat16", info.Name)
	case !info.VulkanMemoryModel:
		return c, fmt.Errorf("%s lacks vulkanMemoryModel", info.Name)
	case info.SubgroupSize == 0:
		return c, fmt.Errorf("%s reports no subgroup size", info.Name)
	}
	grids := coopMatGrids(shape)
	if v := os.Getenv(coopMatGridEnv); v != "" {
		g, err := parseCoopMatGrid(v)
		if err != nil {
			return c, err
		}
		grids = []coopMatGrid{g}
	}
	var err error
	for _, g := range grids {
		c = mmCoopMat{shape: shape, grid: g, sg: info.SubgroupSize, khr: khr}
		if err = c.fits(info); err == nil {
			return c, nil
		}
	}
	return c, err
}

// fits says why the device cannot run c, or nil.
func (c *mmCoopMat) fits(info DeviceInfo) error {
	c.pin = pinnedSubgroupSize(info, c.local())
	t := c.tile()
	nt := int(c.local())
	switch {
	case c.pin == 0 && info.MinSubgroupSize != info.MaxSubgroupSize:
		return fmt.Errorf("%s varies its subgroup size (%d to %d) and cannot fix it for %d invocations", info.Name, info.MinSubgroupSize, info.MaxSubgroupSize, c.local())
	case c.local() > info.MaxComputeWorkGroupInvocations || c.local() > info.MaxComputeWorkGroupSize[0]:
		return fmt.Errorf("%s cannot run workgroups of %d invocations", info.Name, c.local())
	case c.sharedBytes() > int(info.MaxComputeSharedMemorySize):
		return fmt.Errorf("%s has %d bytes of shared memory, the kernel needs %d", info.Name, info.MaxComputeSharedMemorySize, c.sharedBytes())
	case (t.BM*t.BK)%nt != 0 || (t.BK*t.BN)%nt != 0:
		return fmt.Errorf("cooperative-matrix blocking %v: its %d invocations do not stage a %dx%dx%d tile evenly", c.grid, nt, t.BM, t.BN, t.BK)
	}
	return nil
}

// SetCoopMatMul routes the products to the cooperative-matrix kernel, whose operands are
// rounded to float16 (11 significant bits, largest finite 65504), or back to the float32
// kernels: SetProductPrecision(FP16 or FP32), except that it fails, saying why, where the
// device cannot run the kernel. VKGRAD_MATMUL_KERNEL overrides it either way.
func (b *Backend) SetCoopMatMul(on bool) error {
	if on && b.dev.coopMat == nil {
		return fmt.Errorf("vk: no cooperative-matrix matmul: %w", b.dev.coopMatErr)
	}
	if on {
		return b.SetProductPrecision(tensor.FP16)
	}
	return b.SetProductPrecision(tensor.FP32)
}

// SetProductPrecision sets the operands of the products that follow (see tensor.Precision).
// FP16 runs on the cooperative-matrix kernel where the device has one; elsewhere, and for
// BF16, matmul_tiled rounds its operands as it stages them, which costs nothing in speed and
// gains nothing either: it gives every device the numerics of the 16-bit products (a variant
// compiled apart, so float32 products run the same code as before). Only
// MatMul's products round; attention's stay float32.
func (b *Backend) SetProductPrecision(p tensor.Precision) error {
	switch p {
	case tensor.FP32, tensor.BF16, tensor.FP16:
	default:
		return fmt.Errorf("vk: unknown precision %v", p)
	}
	b.precision = p
	b.coopMatOn = p == tensor.FP16 && b.dev.coopMat != nil
	return nil
}

// mmRoundMode is matmul_tiled's rounding for the backend's precision.
func (b *Backend) mmRoundMode() uint32 {
	switch b.precision {
	case tensor.BF16:
		return mmRoundBf16
	case tensor.FP16:
		return mmRoundF16
	}
	return 0
}

// CoopMatMul says which cooperative-matrix product the backend's device would run, or why
// none: "matmul_coopmat_khr: 16x16x16 f16*f16+f32->f32 subgroup, ..., workgroup 128".
func (b *Backend) CoopMatMul() (string, error) {
	c := b.coopMatKernel()
	if c == nil {
		return "", b.dev.coopMatErr
	}
	return fmt.Sprintf("%s: %v, blocking %v, tile %v, workgroup %d", c.name(), c.shape, c.grid, c.tile(), c.local()), nil
}

// coopMatKernel is the cooperative-matrix kernel the backend's products would take (nil where
// the device has none).
func (b *Backend) coopMatKernel() *mmCoopMat { return b.coopMatFor(b.coopMatShader()) }

// coopMatFor is the kernel behind mmShader's name for it.
func (b *Backend) coopMatFor(shader string) *mmCoopMat {
	if shader == mmCoopMatKHRKernel {
		return b.dev.coopMatKHR
	}
	return b.dev.coopMat
}
