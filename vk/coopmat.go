package vk

import (
	"fmt"
	"strings"
	"unsafe"
)

// VK_KHR_cooperative_matrix: subgroup-wide matrix products on the GPU's matrix units (NVIDIA
// tensor cores, AMD RDNA3 WMMA, Intel XMX). The Vulkan headers of Debian bookworm (1.3.239)
// predate the extension, so its structs live here rather than in structs.go, and
// TestCoopMatLayoutsMatchHeaders checks them wherever the headers are new enough.

const (
	coopMatExtension = "VK_KHR_cooperative_matrix"

	stPhysicalDeviceCooperativeMatrixFeaturesKHR   = 1000506000
	stCooperativeMatrixPropertiesKHR               = 1000506001
	stPhysicalDeviceCooperativeMatrixPropertiesKHR = 1000506002
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

// coopMatQueries are the cooperative-matrix feature and property structures of one device.
type coopMatQueries struct {
	feats *physicalDeviceCooperativeMatrixFeaturesKHR
	props *physicalDeviceCooperativeMatrixPropertiesKHR
}

// chainCoopMat adds the cooperative-matrix queries to q's chains where the device has the
// extension; it returns nil otherwise.
func chainCoopMat(q *deviceQueries, exts map[string]bool) *coopMatQueries {
	if !exts[coopMatExtension] {
		return nil
	}
	c := &coopMatQueries{
		feats: &physicalDeviceCooperativeMatrixFeaturesKHR{SType: stPhysicalDeviceCooperativeMatrixFeaturesKHR},
		props: &physicalDeviceCooperativeMatrixPropertiesKHR{SType: stPhysicalDeviceCooperativeMatrixPropertiesKHR},
	}
	c.feats.PNext, q.feats.PNext = q.feats.PNext, unsafe.Pointer(c.feats)
	c.props.PNext, q.props.PNext = q.props.PNext, unsafe.Pointer(c.props)
	return c
}

// coopMatUsable says whether compute shaders may use cooperative matrices on a device whose
// queries returned c: the feature is on and the compute stage is among the supported ones.
func (c *coopMatQueries) usable() bool {
	return c != nil && c.feats.CooperativeMatrix != 0 && c.props.CooperativeMatrixSupportedStages&shaderStageCompute != 0
}

// coopMatShapes enumerates the shapes pd supports (vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR),
// nil when the loader lacks the function or the call fails: the device is then treated as
// having no cooperative matrices.
func (i *Instance) coopMatShapes(pd uintptr) []CoopMatShape {
	fn := i.ld.procAddr(i.handle, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")
	if fn == 0 {
		return nil
	}
	var n uint32
	if call(fn, pd, uintptr(unsafe.Pointer(&n)), 0) != success || n == 0 {
		return nil
	}
	props := make([]cooperativeMatrixPropertiesKHR, n)
	for k := range props {
		props[k].SType = stCooperativeMatrixPropertiesKHR
	}
	if r := call(fn, pd, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0]))); r != success && r != incomplete {
		return nil
	}
	shapes := make([]CoopMatShape, 0, n)
	for _, p := range props[:min(int(n), len(props))] {
		shapes = append(shapes, CoopMatShape{
			M: p.MSize, N: p.NSize, K: p.KSize,
			A: ComponentType(p.AType), B: ComponentType(p.BType), C: ComponentType(p.CType), Result: ComponentType(p.ResultType),
			SaturatingAccumulation: p.SaturatingAccumulation != 0, Scope: Scope(p.Scope),
		})
	}
	return shapes
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
