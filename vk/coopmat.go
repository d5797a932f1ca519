package vk

import (
	"fmt"
	"strings"
	"unsafe"
)

// Cooperative matrices: subgroup-wide matrix products on the GPU's matrix units (NVIDIA
// tensor cores, AMD RDNA3 WMMA, Intel XMX). vkgrad reports the shapes of VK_KHR_cooperative_matrix
// and of NVIDIA's VK_NV_cooperative_matrix; its matmul kernel has one source for both
// (shaders/matmul_coopmat.glsl): matmul_coopmat.comp for the NV extension, compiled by Debian
// bookworm's glslc, and matmul_coopmat_khr.comp for the KHR one, compiled by a newer glslang
// (shaders/compile.go). The Vulkan headers of bookworm (1.3.239) predate the KHR extension, so
// its structs live here rather than in structs.go, and TestCoopMatLayoutsMatchHeaders checks
// them wherever the headers are new enough; the NV structs are in structs.go.

const (
	coopMatExtension = "VK_KHR_cooperative_matrix"

	stPhysicalDeviceCooperativeMatrixFeaturesKHR   = 1000506000
	stCooperativeMatrixPropertiesKHR               = 1000506001
	stPhysicalDeviceCooperativeMatrixPropertiesKHR = 1000506002

	coopMatNVExtension = "VK_NV_cooperative_matrix"

	stPhysicalDeviceCooperativeMatrixFeaturesNV   = 1000249000
	stCooperativeMatrixPropertiesNV               = 1000249001
	stPhysicalDeviceCooperativeMatrixPropertiesNV = 1000249002
	stPhysicalDeviceVulkanMemoryModelFeatures     = 1000211000
)

// ComponentType is a VkComponentTypeKHR: the element type of a cooperative matrix.
type ComponentType uint32

const (
	ComponentFloat16  ComponentType = 0
	ComponentFloat32  ComponentType = 1
	ComponentFloat64  ComponentType = 2
	ComponentSint8    ComponentType = 3
	ComponentSint16   ComponentType = 4
	ComponentSint32   ComponentType = 5
	ComponentSint64   ComponentType = 6
	ComponentUint8    ComponentType = 7
	ComponentUint16   ComponentType = 8
	ComponentUint32   ComponentType = 9
	ComponentUint64   ComponentType = 10
	ComponentBfloat16 ComponentType = 1000141000 // VK_KHR_shader_bfloat16
)

var componentNames = map[ComponentType]string{
	ComponentFloat16: "f16", ComponentFloat32: "f32", ComponentFloat64: "f64",
	ComponentSint8: "s8", ComponentSint16: "s16", ComponentSint32: "s32", ComponentSint64: "s64",
	ComponentUint8: "u8", ComponentUint16: "u16", ComponentUint32: "u32", ComponentUint64: "u64",
	ComponentBfloat16: "bf16",
}

func (c ComponentType) String() string {
	if n, ok := componentNames[c]; ok {
		return n
	}
	return fmt.Sprintf("type%d", uint32(c))
}

// Scope is a VkScopeKHR: the invocations that share one cooperative matrix.
type Scope uint32

const (
	ScopeDevice      Scope = 1
	ScopeWorkgroup   Scope = 2
	ScopeSubgroup    Scope = 3
	ScopeQueueFamily Scope = 5
)

func (s Scope) String() string {
	switch s {
	case ScopeDevice:
		return "device"
	case ScopeWorkgroup:
		return "workgroup"
	case ScopeSubgroup:
		return "subgroup"
	case ScopeQueueFamily:
		return "queue-family"
	}
	return fmt.Sprintf("scope%d", uint32(s))
}

// CoopMatShape is one product Result = A(MxK)·B(KxN) + C(MxN) that the device's cooperative
// matrices support (a VkCooperativeMatrixPropertiesKHR).
type CoopMatShape struct {
	M, N, K                uint32
	A, B, C, Result        ComponentType
	SaturatingAccumulation bool
	Scope                  Scope
}

func (s CoopMatShape) String() string {
	sat := ""
	if s.SaturatingAccumulation {
		sat = " saturating"
	}
	return fmt.Sprintf("%dx%dx%d %s*%s+%s->%s %s%s", s.M, s.N, s.K, s.A, s.B, s.C, s.Result, s.Scope, sat)
}

// physicalDeviceCooperativeMatrixFeaturesKHR mirrors VkPhysicalDeviceCooperativeMatrixFeaturesKHR.
type physicalDeviceCooperativeMatrixFeaturesKHR struct {
	SType                               uint32
	PNext                               unsafe.Pointer
	CooperativeMatrix                   uint32
	CooperativeMatrixRobustBufferAccess uint32
}

// physicalDeviceCooperativeMatrixPropertiesKHR mirrors
// VkPhysicalDeviceCooperativeMatrixPropertiesKHR.
type physicalDeviceCooperativeMatrixPropertiesKHR struct {
	SType                            uint32
	PNext                            unsafe.Pointer
	CooperativeMatrixSupportedStages uint32
}

// cooperativeMatrixPropertiesKHR mirrors VkCooperativeMatrixPropertiesKHR.
type cooperativeMatrixPropertiesKHR struct {
	SType                  uint32
	PNext                  unsafe.Pointer
	MSize                  uint32 `c:"MSize"`
	NSize                  uint32 `c:"NSize"`
	KSize                  uint32 `c:"KSize"`
	AType                  uint32 `c:"AType"`
	BType                  uint32 `c:"BType"`
	CType                  uint32 `c:"CType"`
	ResultType             uint32 `c:"ResultType"`
	SaturatingAccumulation uint32
	Scope                  uint32
}

// coopMatQueries are the cooperative-matrix feature and property structures of one device,
// KHR and NV, and the memory-model feature the NV kernel's SPIR-V declares; each nil where
// the device lacks its extension.
type coopMatQueries struct {
	feats    *physicalDeviceCooperativeMatrixFeaturesKHR
	props    *physicalDeviceCooperativeMatrixPropertiesKHR
	nvFeats  *physicalDeviceCooperativeMatrixFeaturesNV
	nvProps  *physicalDeviceCooperativeMatrixPropertiesNV
	memModel *physicalDeviceVulkanMemoryModelFeatures
}

// chainCoopMat adds the cooperative-matrix queries to q's chains where the device has the
// extensions; hasV12 says whether the memory model is core.
func chainCoopMat(q *deviceQueries, exts map[string]bool, hasV12 bool) *coopMatQueries {
	c := &coopMatQueries{}
	if exts[coopMatExtension] {
		c.feats = &physicalDeviceCooperativeMatrixFeaturesKHR{SType: stPhysicalDeviceCooperativeMatrixFeaturesKHR, PNext: q.feats.PNext}
		c.props = &physicalDeviceCooperativeMatrixPropertiesKHR{SType: stPhysicalDeviceCooperativeMatrixPropertiesKHR, PNext: q.props.PNext}
		q.feats.PNext, q.props.PNext = unsafe.Pointer(c.feats), unsafe.Pointer(c.props)
	}
	if exts[coopMatNVExtension] {
		c.nvFeats = &physicalDeviceCooperativeMatrixFeaturesNV{SType: stPhysicalDeviceCooperativeMatrixFeaturesNV, PNext: q.feats.PNext}
		c.nvProps = &physicalDeviceCooperativeMatrixPropertiesNV{SType: stPhysicalDeviceCooperativeMatrixPropertiesNV, PNext: q.props.PNext}
		q.feats.PNext, q.props.PNext = unsafe.Pointer(c.nvFeats), unsafe.Pointer(c.nvProps)
	}
	if hasV12 || exts["VK_KHR_vulkan_memory_model"] {
		c.memModel = &physicalDeviceVulkanMemoryModelFeatures{SType: stPhysicalDeviceVulkanMemoryModelFeatures, PNext: q.feats.PNext}
		q.feats.PNext = unsafe.Pointer(c.memModel)
	}
	return c
}

// describeCoopMat fills d's cooperative-matrix fields from the answered queries c: the shapes
// of each extension whose feature is on for the compute stage.
func (i *Instance) describeCoopMat(pd uintptr, c *coopMatQueries, d *DeviceInfo) {
	if c.feats != nil && c.feats.CooperativeMatrix != 0 && c.props.CooperativeMatrixSupportedStages&shaderStageCompute != 0 {
		d.CoopMatShapes = i.coopMatShapes(pd)
	}
	if c.nvFeats != nil && c.nvFeats.CooperativeMatrix != 0 && c.nvProps.CooperativeMatrixSupportedStages&shaderStageCompute != 0 {
		d.CoopMatNVShapes = i.coopMatNVShapes(pd)
	}
	d.VulkanMemoryModel = c.memModel != nil && c.memModel.VulkanMemoryModel != 0
}

// coopMatShapes enumerates the shapes pd supports (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR),
// nil when the loader lacks the function or the call fails: the device is then treated as
// having no cooperative matrices.
func (i *Instance) coopMatShapes(pd uintptr) []CoopMatShape {
	props := enumerateCoopMat(i.ld.procAddr(i.handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"), pd,
		func(p *cooperativeMatrixPropertiesKHR) { p.SType = stCooperativeMatrixPropertiesKHR })
	shapes := make([]CoopMatShape, 0, len(props))
	for _, p := range props {
		shapes = append(shapes, CoopMatShape{
			M: p.MSize, N: p.NSize, K: p.KSize,
			A: ComponentType(p.AType), B: ComponentType(p.BType), C: ComponentType(p.CType), Result: ComponentType(p.ResultType),
			SaturatingAccumulation: p.SaturatingAccumulation != 0, Scope: Scope(p.Scope),
		})
	}
	return shapes
}

// coopMatNVShapes enumerates the shapes of VK_NV_cooperative_matrix, whose enums share the
// KHR values.
func (i *Instance) coopMatNVShapes(pd uintptr) []CoopMatShape {
	props := enumerateCoopMat(i.ld.procAddr(i.handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"), pd,
		func(p *cooperativeMatrixPropertiesNV) { p.SType = stCooperativeMatrixPropertiesNV })
	shapes := make([]CoopMatShape, 0, len(props))
	for _, p := range props {
		shapes = append(shapes, CoopMatShape{
			M: p.MSize, N: p.NSize, K: p.KSize,
			A: ComponentType(p.AType), B: ComponentType(p.BType), C: ComponentType(p.CType), Result: ComponentType(p.DType),
			Scope: Scope(p.Scope),
		})
	}
	return shapes
}

// enumerateCoopMat runs the two-call enumeration of fn, nil when fn is missing or fails.
func enumerateCoopMat[T any](fn, pd uintptr, init func(*T)) []T {
	if fn == 0 {
		return nil
	}
	var n uint32
	if call(fn, pd, uintptr(unsafe.Pointer(&n)), 0) != success || n == 0 {
		return nil
	}
	props := make([]T, n)
	for k := range props {
		init(&props[k])
	}
	if r := call(fn, pd, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0]))); r != success && r != incomplete {
		return nil
	}
	return props[:min(int(n), len(props))]
}

// CoopMatShapeFor picks, among the shapes a device enumerates, the subgroup-scope product of
// `in` operands with float32 accumulation and result that a matmul kernel would tile by:
// 16x16x16 where the device has it (the shape NVIDIA, AMD and Intel all offer), else the
// smallest M·N·K. ok is false when the device has none.
func CoopMatShapeFor(shapes []CoopMatShape, in ComponentType) (s CoopMatShape, ok bool) {
	for _, c := range shapes {
		if c.A != in || c.B != in || c.C != ComponentFloat32 || c.Result != ComponentFloat32 || c.Scope != ScopeSubgroup || c.SaturatingAccumulation {
			continue
		}
		if c.M == 16 && c.N == 16 && c.K == 16 {
			return c, true
		}
		if !ok || c.M*c.N*c.K < s.M*s.N*s.K {
			s, ok = c, true
		}
	}
	return s, ok
}

// describeCoopMat formats the device's cooperative-matrix shapes for `vkgrad devices`.
func describeCoopMat(shapes []CoopMatShape) string {
	if len(shapes) == 0 {
		return "none (" + coopMatExtension + " absent or off for compute)"
	}
	parts := make([]string, len(shapes))
	for k, s := range shapes {
		parts[k] = s.String()
	}
	return strings.Join(parts, ", ")
}

// enableCoopMatKernel adds to a device's creation chain and extensions what the matmul
// kernels declare: VK_NV_cooperative_matrix where nv (VK_KHR_cooperative_matrix is added by
// coopMatCreation wherever the device has it), the Vulkan memory model and float16
// arithmetic, the latter two core from Vulkan 1.2 (v12).
func enableCoopMatKernel(pNext unsafe.Pointer, exts []string, nv, v12 bool) (unsafe.Pointer, []string) {
	if nv {
		pNext = unsafe.Pointer(&physicalDeviceCooperativeMatrixFeaturesNV{SType: stPhysicalDeviceCooperativeMatrixFeaturesNV, PNext: pNext, CooperativeMatrix: 1})
		exts = append(exts, coopMatNVExtension)
	}
	pNext = unsafe.Pointer(&physicalDeviceVulkanMemoryModelFeatures{SType: stPhysicalDeviceVulkanMemoryModelFeatures, PNext: pNext, VulkanMemoryModel: 1})
	pNext = unsafe.Pointer(&physicalDeviceShaderFloat16Int8Features{SType: stPhysicalDeviceShaderFloat16Int8, PNext: pNext, ShaderFloat16: 1})
	if !v12 {
		exts = append(exts, "VK_KHR_vulkan_memory_model", "VK_KHR_shader_float16_int8")
	}
	return pNext, exts
}

// coopMatCreation extends a device's creation chain and extensions with the cooperative-matrix
// features the device has: VK_KHR_cooperative_matrix where it reports shapes, and what the
// matmul kernels need where it can run one (cm, the one its products take, see coopMatKernels,
// else nil). ok is false when there is nothing to add.
func coopMatCreation(info DeviceInfo, pNext unsafe.Pointer, exts []string, instVersion uint32) (next unsafe.Pointer, withExts []string, cm *mmCoopMat, ok bool) {
	next, withExts = pNext, append([]string(nil), exts...)
	if len(info.CoopMatShapes) > 0 {
		next = unsafe.Pointer(&physicalDeviceCooperativeMatrixFeaturesKHR{SType: stPhysicalDeviceCooperativeMatrixFeaturesKHR, PNext: next, CooperativeMatrix: 1})
		withExts = append(withExts, coopMatExtension)
		ok = true
	}
	cm, _, err := coopMatKernels(info)
	if err != nil {
		return next, withExts, nil, ok
	}
	v12 := info.APIVersion >= apiVersion(1, 2, 0) && instVersion >= apiVersion(1, 2, 0)
	next, withExts = enableCoopMatKernel(next, withExts, !cm.khr, v12)
	return next, withExts, cm, true
}
