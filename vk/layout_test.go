//go:build cgo

package vk

// Go does not allow cgo in test files, so this test writes a C program that prints the sizes
// and offsets of the mirrored structs (and the values of the constants), compiles it with the
// C compiler cgo uses, and compares. It skips where the compiler or vulkan/vulkan.h is missing.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var mirroredStructs = []any{
	applicationInfo{}, instanceCreateInfo{}, debugUtilsMessengerCreateInfoEXT{},
	debugUtilsMessengerCallbackDataEXT{}, layerProperties{}, extensionProperties{},
	physicalDeviceLimits{}, physicalDeviceSparseProperties{}, physicalDeviceProperties{},
	physicalDeviceProperties2{}, physicalDeviceDriverProperties{}, conformanceVersion{},
	physicalDeviceSubgroupProperties{}, physicalDeviceIDProperties{}, physicalDeviceFeatures{},
	physicalDeviceSubgroupSizeControlProperties{}, physicalDeviceSubgroupSizeControlFeatures{},
	pipelineShaderStageRequiredSubgroupSizeCreateInfo{},
	physicalDeviceMaintenance3Properties{}, physicalDeviceMaintenance4Properties{},
	physicalDeviceMemoryBudgetPropertiesEXT{}, physicalDeviceMemoryProperties2{},
	physicalDeviceFeatures2{}, physicalDeviceShaderFloat16Int8Features{},
	physicalDevice16BitStorageFeatures{}, memoryType{}, memoryHeap{},
	physicalDeviceShaderCorePropertiesAMD{}, physicalDeviceShaderSMBuiltinsPropertiesNV{},
	physicalDeviceMemoryProperties{}, extent3D{}, queueFamilyProperties{},
	deviceQueueCreateInfo{}, deviceCreateInfo{}, bufferCreateInfo{}, memoryRequirements{},
	memoryAllocateInfo{}, mappedMemoryRange{}, shaderModuleCreateInfo{},
	pipelineCacheCreateInfo{}, specializationMapEntry{}, specializationInfo{},
	pipelineShaderStageCreateInfo{}, computePipelineCreateInfo{},
	descriptorSetLayoutBinding{}, descriptorSetLayoutCreateInfo{}, pushConstantRange{},
	pipelineLayoutCreateInfo{}, descriptorPoolSize{}, descriptorPoolCreateInfo{},
	descriptorSetAllocateInfo{}, descriptorBufferInfo{}, writeDescriptorSet{},
	commandPoolCreateInfo{}, commandBufferAllocateInfo{}, commandBufferBeginInfo{},
	memoryBarrier{}, bufferCopy{}, submitInfo{}, fenceCreateInfo{}, queryPoolCreateInfo{}, validationFeaturesEXT{},
	physicalDeviceVulkanMemoryModelFeatures{}, physicalDeviceCooperativeMatrixFeaturesNV{},
	physicalDeviceCooperativeMatrixPropertiesNV{}, cooperativeMatrixPropertiesNV{},
}

var mirroredConsts = map[string]int64{
	"VK_STRUCTURE_TYPE_APPLICATION_INFO":                                         stApplicationInfo,
	"VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO":                                     stInstanceCreateInfo,
	"VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO":                                 stDeviceQueueCreateInfo,
	"VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO":                                       stDeviceCreateInfo,
	"VK_STRUCTURE_TYPE_SUBMIT_INFO":                                              stSubmitInfo,
	"VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO":                                     stMemoryAllocateInfo,
	"VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE":                                      stMappedMemoryRange,
	"VK_STRUCTURE_TYPE_FENCE_CREATE_INFO":                                        stFenceCreateInfo,
	"VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO":                                   stQueryPoolCreateInfo,
	"VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO":                                       stBufferCreateInfo,
	"VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO":                                stShaderModuleCreateInfo,
	"VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO":                               stPipelineCacheCreateInfo,
	"VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO":                        stPipelineShaderStageCreateInfo,
	"VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO":                             stComputePipelineCreateInfo,
	"VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO":                              stPipelineLayoutCreateInfo,
	"VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO":                        stDescriptorSetLayoutCreateInfo,
	"VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO":                              stDescriptorPoolCreateInfo,
	"VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO":                             stDescriptorSetAllocateInfo,
	"VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET":                                     stWriteDescriptorSet,
	"VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO":                                 stCommandPoolCreateInfo,
	"VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO":                             stCommandBufferAllocateInfo,
	"VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO":                                stCommandBufferBeginInfo,
	"VK_STRUCTURE_TYPE_MEMORY_BARRIER":                                           stMemoryBarrier,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2":                               stPhysicalDeviceFeatures2,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2":                             stPhysicalDeviceProperties2,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES":                      stPhysicalDeviceSubgroupProperties,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES":         stPhysicalDeviceSubgroupSizeControlProperties,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES":           stPhysicalDeviceSubgroupSizeControlFeatures,
	"VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO": stPipelineShaderStageRequiredSubgroupSizeCreateInfo,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES":                 stPhysicalDeviceMaintenance3,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES":                 stPhysicalDeviceMaintenance4,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT":             stPhysicalDeviceMemoryBudget,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2":                      stPhysicalDeviceMemoryProperties2,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES":                            stPhysicalDeviceIDProperties,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES":                        stPhysicalDeviceDriverProperties,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES":             stPhysicalDeviceShaderFloat16Int8,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES":                   stPhysicalDevice16BitStorage,
	"VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT":                    stDebugUtilsMessengerCreateInfoEXT,
	"VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT":                                  stValidationFeaturesEXT,
	"VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT":                validationFeatureEnableSync,
	"VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR":                           instanceCreateEnumeratePortability,
	"VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT":                            debugSeverityWarning,
	"VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT":                              debugSeverityError,
	"VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT":                                debugTypeGeneral,
	"VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT":                             debugTypeValidation,
	"VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT":                            debugTypePerformance,
	"VK_QUERY_TYPE_TIMESTAMP":                                                    queryTypeTimestamp,
	"VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT":                                          pipelineStageTopOfPipe,
	"VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT":                                       pipelineStageComputeShader,
	"VK_PIPELINE_STAGE_TRANSFER_BIT":                                             pipelineStageTransfer,
	"VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT":                                       pipelineStageBottomOfPipe,
	"VK_PIPELINE_STAGE_HOST_BIT":                                                 pipelineStageHost,
	"VK_ACCESS_SHADER_READ_BIT":                                                  accessShaderRead,
	"VK_ACCESS_SHADER_WRITE_BIT":                                                 accessShaderWrite,
	"VK_ACCESS_TRANSFER_READ_BIT":                                                accessTransferRead,
	"VK_ACCESS_TRANSFER_WRITE_BIT":                                               accessTransferWrite,
	"VK_ACCESS_HOST_READ_BIT":                                                    accessHostRead,
	"VK_ACCESS_HOST_WRITE_BIT":                                                   accessHostWrite,
	"VK_QUERY_RESULT_64_BIT":                                                     queryResult64,
	"VK_QUERY_RESULT_WAIT_BIT":                                                   queryResultWait,
	"VK_PIPELINE_BIND_POINT_COMPUTE":                                             pipelineBindPointCompute,
	"VK_DESCRIPTOR_TYPE_STORAGE_BUFFER":                                          descriptorTypeStorageBuffer,
	"VK_SHADER_STAGE_COMPUTE_BIT":                                                shaderStageCompute,
	"VK_SUBGROUP_FEATURE_BASIC_BIT":                                              subgroupFeatureBasic,
	"VK_SUBGROUP_FEATURE_ARITHMETIC_BIT":                                         subgroupFeatureArithmetic,
	"VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT":                            commandPoolCreateResetCommandBuffer,
	"VK_COMMAND_BUFFER_LEVEL_PRIMARY":                                            commandBufferLevelPrimary,
	"VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT":                                commandBufferUsageOneTimeSubmit,
	"VK_BUFFER_USAGE_TRANSFER_SRC_BIT":                                           bufferUsageTransferSrc,
	"VK_BUFFER_USAGE_TRANSFER_DST_BIT":                                           bufferUsageTransferDst,
	"VK_BUFFER_USAGE_STORAGE_BUFFER_BIT":                                         bufferUsageStorageBuffer,
	"VK_SHARING_MODE_EXCLUSIVE":                                                  sharingModeExclusive,
	"VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT":                                        memoryPropertyDeviceLocal,
	"VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT":                                        memoryPropertyHostVisible,
	"VK_MEMORY_PROPERTY_HOST_COHERENT_BIT":                                       memoryPropertyHostCoherent,
	"VK_MEMORY_PROPERTY_HOST_CACHED_BIT":                                         memoryPropertyHostCached,
	"VK_MEMORY_HEAP_DEVICE_LOCAL_BIT":                                            memoryHeapDeviceLocal,
	"VK_QUEUE_GRAPHICS_BIT":                                                      queueGraphics,
	"VK_QUEUE_COMPUTE_BIT":                                                       queueCompute,
	"VK_QUEUE_TRANSFER_BIT":                                                      queueTransfer,
	"VK_PHYSICAL_DEVICE_TYPE_OTHER":                                              physicalDeviceTypeOther,
	"VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU":                                     physicalDeviceTypeIntegratedGPU,
	"VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU":                                       physicalDeviceTypeDiscreteGPU,
	"VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU":                                        physicalDeviceTypeVirtualGPU,
	"VK_PHYSICAL_DEVICE_TYPE_CPU":                                                physicalDeviceTypeCPU,
	"VK_SUCCESS":                                                                 int64(success),
	"VK_NOT_READY":                                                               int64(notReady),
	"VK_TIMEOUT":                                                                 int64(timeout),
	"VK_INCOMPLETE":                                                              int64(incomplete),
	"VK_ERROR_OUT_OF_HOST_MEMORY":                                                int64(errOutOfHostMemory),
	"VK_ERROR_OUT_OF_DEVICE_MEMORY":                                              int64(errOutOfDeviceMemory),
	"VK_ERROR_INITIALIZATION_FAILED":                                             int64(errInitializationFailed),
	"VK_ERROR_DEVICE_LOST":                                                       int64(errDeviceLost),
	"VK_ERROR_MEMORY_MAP_FAILED":                                                 int64(errMemoryMapFailed),
	"VK_ERROR_LAYER_NOT_PRESENT":                                                 int64(errLayerNotPresent),
	"VK_ERROR_EXTENSION_NOT_PRESENT":                                             int64(errExtensionNotPresent),
	"VK_ERROR_FEATURE_NOT_PRESENT":                                               int64(errFeatureNotPresent),
	"VK_ERROR_INCOMPATIBLE_DRIVER":                                               int64(errIncompatibleDriver),
	"VK_ERROR_TOO_MANY_OBJECTS":                                                  int64(errTooManyObjects),
	"VK_ERROR_FORMAT_NOT_SUPPORTED":                                              int64(errFormatNotSupported),
	"VK_ERROR_FRAGMENTED_POOL":                                                   int64(errFragmentedPool),
	"VK_ERROR_UNKNOWN":                                                           int64(errUnknown),
	"VK_ERROR_OUT_OF_POOL_MEMORY":                                                int64(errOutOfPoolMemory),
	"VK_ERROR_FRAGMENTATION":                                                     int64(errFragmentation),
	"VK_ERROR_INVALID_SHADER_NV":                                                 int64(errInvalidShaderNV),
	"VK_PIPELINE_COMPILE_REQUIRED":                                               int64(pipelineCompileRequired),

	// the cooperative-matrix matmul (vk/coopmat.go)
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES":     stPhysicalDeviceVulkanMemoryModelFeatures,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV":   stPhysicalDeviceCooperativeMatrixFeaturesNV,
	"VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV":                 stCooperativeMatrixPropertiesNV,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV": stPhysicalDeviceCooperativeMatrixPropertiesNV,
	"VK_COMPONENT_TYPE_FLOAT16_NV":                                       int64(ComponentFloat16),
	"VK_COMPONENT_TYPE_FLOAT32_NV":                                       int64(ComponentFloat32),
	"VK_SCOPE_SUBGROUP_NV":                                               int64(ScopeSubgroup),
	"VK_SCOPE_WORKGROUP_NV":                                              int64(ScopeWorkgroup),

	// compute-unit counts (vk/matmul_tiles.go)
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD":       stPhysicalDeviceShaderCorePropertiesAMD,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV": stPhysicalDeviceShaderSMBuiltinsPropertiesNV,
}

// cName maps a mirror's Go name to its C name: applicationInfo -> VkApplicationInfo,
// PNext -> pNext.
func cTypeName(goName string) string  { return "Vk" + strings.ToUpper(goName[:1]) + goName[1:] }
func cFieldName(goName string) string { return strings.ToLower(goName[:1]) + goName[1:] }

// layoutLines lists, for t and every struct nested in it, "C-expression Go-value" pairs.
func layoutLines(t reflect.Type) (exprs []string, want []uint64) {
	ct := cTypeName(t.Name())
	exprs = append(exprs, fmt.Sprintf("sizeof(%s)", ct), fmt.Sprintf("_Alignof(%s)", ct))
	want = append(want, uint64(t.Size()), uint64(t.Align()))
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		cf := cFieldName(f.Name)
		if tag := f.Tag.Get("c"); tag != "" { // C names that start with a capital (MSize)
			cf = tag
		}
		exprs = append(exprs, fmt.Sprintf("offsetof(%s, %s)", ct, cf), fmt.Sprintf("sizeof(((%s*)0)->%s)", ct, cf))
		want = append(want, uint64(f.Offset), uint64(f.Type.Size()))
	}
	return exprs, want
}

func TestStructLayoutsMatchHeaders(t *testing.T) {
	var exprs []string
	var want []uint64
	seen := map[string]bool{}
	for _, v := range mirroredStructs {
		rt := reflect.TypeOf(v)
		seen[rt.Name()] = true
		e, w := layoutLines(rt)
		exprs = append(exprs, e...)
		want = append(want, w...)
	}
	// Every struct declared in structs.go must be in the list above.
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "structs.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range file.Decls {
		if g, ok := decl.(*ast.GenDecl); ok {
			for _, s := range g.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && !seen[ts.Name.Name] {
					t.Errorf("struct %s in structs.go is not checked by this test", ts.Name.Name)
				}
			}
		}
	}
	var constNames []string
	for name, v := range mirroredConsts {
		constNames = append(constNames, name)
		exprs = append(exprs, "(long long)"+name)
		want = append(want, uint64(v))
	}
	checkLayoutProbe(t, exprs, want, "")
	t.Logf("checked %d struct sizes, alignments, field offsets and sizes, and %d constants", len(exprs)-len(constNames), len(constNames))
}

// coopMatStructs and coopMatConsts mirror VK_KHR_cooperative_matrix (vk/coopmat.go).
var coopMatStructs = []any{
	physicalDeviceCooperativeMatrixFeaturesKHR{}, physicalDeviceCooperativeMatrixPropertiesKHR{},
	cooperativeMatrixPropertiesKHR{},
}

var coopMatConsts = map[string]int64{
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR":   stPhysicalDeviceCooperativeMatrixFeaturesKHR,
	"VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR":                 stCooperativeMatrixPropertiesKHR,
	"VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR": stPhysicalDeviceCooperativeMatrixPropertiesKHR,
	"VK_COMPONENT_TYPE_FLOAT16_KHR":                                       int64(ComponentFloat16),
	"VK_COMPONENT_TYPE_FLOAT32_KHR":                                       int64(ComponentFloat32),
	"VK_COMPONENT_TYPE_FLOAT64_KHR":                                       int64(ComponentFloat64),
	"VK_COMPONENT_TYPE_SINT8_KHR":                                         int64(ComponentSint8),
	"VK_COMPONENT_TYPE_UINT64_KHR":                                        int64(ComponentUint64),
	"VK_SCOPE_DEVICE_KHR":                                                 int64(ScopeDevice),
	"VK_SCOPE_WORKGROUP_KHR":                                              int64(ScopeWorkgroup),
	"VK_SCOPE_SUBGROUP_KHR":                                               int64(ScopeSubgroup),
	"VK_SCOPE_QUEUE_FAMILY_KHR":                                           int64(ScopeQueueFamily),
}

// TestCoopMatLayoutsMatchHeaders checks the cooperative-matrix mirrors against headers that
// define VK_KHR_cooperative_matrix (1.3.255 and later), and skips, saying so, on older ones.
func TestCoopMatLayoutsMatchHeaders(t *testing.T) {
	var exprs []string
	var want []uint64
	for _, v := range coopMatStructs {
		e, w := layoutLines(reflect.TypeOf(v))
		exprs = append(exprs, e...)
		want = append(want, w...)
	}
	for name, v := range coopMatConsts {
		exprs = append(exprs, "(long long)"+name)
		want = append(want, uint64(v))
	}
	checkLayoutProbe(t, exprs, want, "VK_KHR_cooperative_matrix")
}

// checkLayoutProbe compiles a C program printing each of exprs with the C compiler cgo uses
// and compares its output with want. With guard set, it skips when the headers do not define
// guard (an extension newer than they are).
func checkLayoutProbe(t *testing.T, exprs []string, want []uint64, guard string) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		out, err := exec.Command("go", "env", "CC").Output()
		if err != nil {
			t.Skipf("cannot ask go env for the C compiler: %v", err)
		}
		cc = strings.TrimSpace(string(out))
	}
	ccPath, err := exec.LookPath(strings.Fields(cc)[0])
	if err != nil {
		t.Skipf("C compiler %q not found: %v", cc, err)
	}
	var src bytes.Buffer
	src.WriteString("#if !__has_include(<vulkan/vulkan.h>)\n#error no vulkan header\n#endif\n")
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <vulkan/vulkan.h>\nint main(void) {\n")
	if guard != "" {
		fmt.Fprintf(&src, "#ifndef %s\n  printf(\"absent\\n\");\n#else\n", guard)
	}
	for _, e := range exprs {
		fmt.Fprintf(&src, "  printf(\"%%llu\\n\", (unsigned long long)(%s));\n", e)
	}
	if guard != "" {
		src.WriteString("#endif\n")
	}
	src.WriteString("  return 0;\n}\n")
	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "layout.c"), filepath.Join(dir, "layout")
	if err := os.WriteFile(cfile, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(strings.Fields(cc)[1:], "-o", exe, cfile)
	if out, err := exec.Command(ccPath, args...).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("no vulkan header")) {
			t.Skip("vulkan/vulkan.h not installed (Debian: libvulkan-dev)")
		}
		t.Fatalf("compiling the layout probe: %v\n%s", err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("running the layout probe: %v", err)
	}
	if guard != "" && strings.TrimSpace(string(out)) == "absent" {
		t.Skipf("the installed Vulkan headers predate %s; TestCoopMatLayoutMatchesSpec checks the layout instead", guard)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for i := range exprs {
		if !sc.Scan() {
			t.Fatalf("probe printed only %d of %d values", i, len(exprs))
		}
		got, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("probe line %d: %v", i, err)
		}
		if got != want[i] {
			t.Errorf("%s = %d in C, %d in Go", exprs[i], got, want[i])
		}
	}
}
