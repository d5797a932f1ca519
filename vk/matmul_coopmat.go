package vk

import "fmt"

// mmCoopMat is the cooperative-matrix matmul kernel (shaders/matmul_coopmat.comp) as a device
// runs it: the LM x LN x LK product its subgroups issue and its workgroup of 4 subgroups.
type mmCoopMat struct {
	shape CoopMatShape
	sg    uint32 // subgroup size
	pin   uint32 // the subgroup size required at pipeline creation, 0 where it cannot be
}

const mmCoopMatKernel = "matmul_coopmat"

// tile is the kernel's output tile and depth step, for the chunking and split-K planning it
// shares with matmul_tiled.
func (c mmCoopMat) tile() mmTile {
	return mmTile{BM: 4 * int(c.shape.M), BN: 4 * int(c.shape.N), BK: int(c.shape.K), TM: int(c.shape.M), TN: int(c.shape.N)}
}

func (c mmCoopMat) local() uint32 { return 4 * c.sg }

// sharedBytes is the shared memory the kernel declares: float16 operand tiles, float32 sums.
func (c mmCoopMat) sharedBytes() int {
	t := c.tile()
	return 2*t.BM*t.BK + 2*t.BK*t.BN + 4*t.BM*t.BN
}

func (c mmCoopMat) kernel() Kernel {
	return Kernel{Shader: mmCoopMatKernel, Bindings: 5, Push: 18, Local: [3]uint32{c.local(), 1, 1},
		Spec: [maxSpec]uint32{c.shape.M, c.shape.N, c.shape.K}, SubgroupSize: c.pin}
}

// coopMatKernelFor is the cooperative-matrix kernel a device can run, or why it cannot: it
// needs a subgroup-scope fp16 x fp16 + fp32 shape of VK_NV_cooperative_matrix, the
// shaderFloat16 and vulkanMemoryModel features, and a subgroup size that does not vary, since
// the shader counts on 4 subgroups a workgroup.
func coopMatKernelFor(info DeviceInfo) (mmCoopMat, error) {
	var c mmCoopMat
	shape, ok := CoopMatShapeFor(info.CoopMatNVShapes, ComponentFloat16)
	switch {
	case len(info.CoopMatNVShapes) == 0:
		return c, fmt.Errorf("%s lacks %s", info.Name, coopMatNVExtension)
	case !ok:
		return c, fmt.Errorf("%s enumerates no subgroup f16*f16+f32->f32 cooperative matrix", info.Name)
	case shape.N%8 != 0 || shape.K%8 != 0:
		return c, fmt.Errorf("%s's cooperative matrix %v has rows of other than 16-byte multiples", info.Name, shape)
	case !info.Float16:
		return c, fmt.Errorf("%s lacks shaderFloat16", info.Name)
	case !info.VulkanMemoryModel:
		return c, fmt.Errorf("%s lacks vulkanMemoryModel", info.Name)
	case info.SubgroupSize == 0:
		return c, fmt.Errorf("%s reports no subgroup size", info.Name)
	}
	c = mmCoopMat{shape: shape, sg: info.SubgroupSize}
	c.pin = pinnedSubgroupSize(info, c.local())
	switch {
	case c.pin == 0 && info.MinSubgroupSize != info.MaxSubgroupSize:
		return c, fmt.Errorf("%s varies its subgroup size (%d to %d) and cannot fix it for %d invocations", info.Name, info.MinSubgroupSize, info.MaxSubgroupSize, c.local())
	case c.local() > info.MaxComputeWorkGroupInvocations || c.local() > info.MaxComputeWorkGroupSize[0]:
		return c, fmt.Errorf("%s cannot run workgroups of %d invocations", info.Name, c.local())
	case c.sharedBytes() > int(info.MaxComputeSharedMemorySize):
		return c, fmt.Errorf("%s has %d bytes of shared memory, the kernel needs %d", info.Name, info.MaxComputeSharedMemorySize, c.sharedBytes())
	}
	return c, nil
}

// SetCoopMatMul routes the products to the cooperative-matrix kernel, whose operands are
// rounded to float16 (11 significant bits, largest finite 65504), or back to the float32
// kernels. It is off by default: a float32 run keeps float32 products, as PyTorch's does. It
// fails, saying why, where the device cannot run the kernel. VKGRAD_MATMUL_KERNEL overrides it
// either way.
func (b *Backend) SetCoopMatMul(on bool) error {
	if on && b.dev.coopMat == nil {
		return fmt.Errorf("vk: no cooperative-matrix matmul: %w", b.dev.coopMatErr)
	}
	b.coopMatOn = on
	return nil
}

// CoopMatMul says which cooperative-matrix product the backend's device would run, or why
// none: "16x16x16 f16*f16+f32->f32 subgroup, workgroup 128".
func (b *Backend) CoopMatMul() (string, error) {
	if b.dev.coopMat == nil {
		return "", b.dev.coopMatErr
	}
	return fmt.Sprintf("%v, workgroup %d", b.dev.coopMat.shape, b.dev.coopMat.local()), nil
}
