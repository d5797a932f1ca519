package vk

import "os"

// noSubgroupEnv names the environment variable that, set to 1, keeps every reduction kernel on
// its shared-memory variant even where the device has subgroup arithmetic.
const noSubgroupEnv = "VKGRAD_NO_SUBGROUP"

// subgroupVariants maps each kernel that reduces through a shared-memory tree (shaders/X.comp)
// to its variant that reduces with subgroup arithmetic (shaders/X_sg.comp). Both are
// deterministic; within one subgroup the subgroup variant needs no barrier at all.
var subgroupVariants = map[string]string{
	"crossentropy_forward":       "crossentropy_forward_sg",
	"crossentropy_fused":         "crossentropy_fused_sg",
	"crossentropy_forward_vec4":  "crossentropy_forward_vec4_sg",
	"crossentropy_fused_vec4":    "crossentropy_fused_vec4_sg",
	"layernorm_backward":         "layernorm_backward_sg",
	"layernorm_forward":          "layernorm_forward_sg",
	"residual_layernorm_forward": "residual_layernorm_forward_sg",
	"logsoftmax_gather":          "logsoftmax_gather_sg",
	"logsoftmax_gather_backward": "logsoftmax_gather_backward_sg",
	"rmsnorm_backward":           "rmsnorm_backward_sg",
	"rmsnorm_forward":            "rmsnorm_forward_sg",
	"residual_rmsnorm_forward":   "residual_rmsnorm_forward_sg",
	"sum":                        "sum_sg",
	"sumsquares":                 "sumsquares_sg",
	"sum_vec4":                   "sum_vec4_sg",
	"sumsquares_vec4":            "sumsquares_vec4_sg",
}

// subgroupArithmetic reports whether compute shaders may use basic and arithmetic subgroup
// operations.
func subgroupArithmetic(p *physicalDeviceSubgroupProperties) bool {
	const ops = subgroupFeatureBasic | subgroupFeatureArithmetic
	return p.SupportedStages&shaderStageCompute != 0 && p.SupportedOperations&ops == ops
}

// subgroupSizeControlCore reports whether subgroup size control is core (Vulkan 1.3) for a
// device of version api under an instance of version inst, rather than an extension.
func subgroupSizeControlCore(api, inst uint32) bool {
	return api >= apiVersion(1, 3, 0) && inst >= apiVersion(1, 3, 0)
}

// subgroupReductions reports whether the reduction kernels run their subgroup variants on the
// device: when it has subgroup arithmetic and VKGRAD_NO_SUBGROUP is not 1.
func subgroupReductions(info DeviceInfo) bool {
	return info.SubgroupArithmetic && os.Getenv(noSubgroupEnv) != "1"
}

// pinnedSubgroupSize is the subgroup size the subgroup variants require of the driver: the
// device's default size where a pipeline may require it for workgroups of up to wg
// invocations, else 0 (the driver's choice). A driver free to pick a size per pipeline could
// give a forward kernel and the backward that recomputes its sums different orders of
// additions, and so different bits; a fixed size also keeps a row kernel's workgroup (rowWG)
// one subgroup.
func pinnedSubgroupSize(info DeviceInfo, wg uint32) uint32 {
	s := info.SubgroupSize
	if s == 0 || s < info.MinSubgroupSize || s > info.MaxSubgroupSize || uint64(wg) > uint64(s)*uint64(info.MaxComputeWorkgroupSubgroups) {
		return 0
	}
	return s
}

// reduceKernel is k in the variant the backend's reductions use, profiled under k's own name;
// its workgroup may have up to wg invocations. It allocates nothing: the variant's name is a
// constant of the table.
func (b *Backend) reduceKernel(k Kernel) Kernel {
	if b.subgroupReduce {
		if sg, ok := subgroupVariants[k.Shader]; ok {
			k.Op, k.Shader, k.SubgroupSize = k.Shader, sg, b.subgroupSize
		}
	}
	return k
}
