package vk

import "fmt"

// Vulkan enum and flag values used by vkgrad, from vulkan_core.h (checked by layout_test.go).
const (
	stApplicationInfo                                   = 0
	stInstanceCreateInfo                                = 1
	stDeviceQueueCreateInfo                             = 2
	stDeviceCreateInfo                                  = 3
	stSubmitInfo                                        = 4
	stMemoryAllocateInfo                                = 5
	stMappedMemoryRange                                 = 6
	stFenceCreateInfo                                   = 8
	stQueryPoolCreateInfo                               = 11
	stBufferCreateInfo                                  = 12
	stShaderModuleCreateInfo                            = 16
	stPipelineCacheCreateInfo                           = 17
	stPipelineShaderStageCreateInfo                     = 18
	stComputePipelineCreateInfo                         = 29
	stPipelineLayoutCreateInfo                          = 30
	stDescriptorSetLayoutCreateInfo                     = 32
	stDescriptorPoolCreateInfo                          = 33
	stDescriptorSetAllocateInfo                         = 34
	stWriteDescriptorSet                                = 35
	stCommandPoolCreateInfo                             = 39
	stCommandBufferAllocateInfo                         = 40
	stCommandBufferBeginInfo                            = 42
	stMemoryBarrier                                     = 46
	stPhysicalDeviceFeatures2                           = 1000059000
	stPhysicalDeviceProperties2                         = 1000059001
	stPhysicalDeviceSubgroupProperties                  = 1000094000
	stPhysicalDeviceMaintenance3                        = 1000168000
	stPhysicalDeviceMaintenance4                        = 1000413001
	stPhysicalDeviceMemoryBudget                        = 1000237000
	stPhysicalDeviceMemoryProperties2                   = 1000059006
	stPhysicalDeviceIDProperties                        = 1000071004
	stPhysicalDeviceDriverProperties                    = 1000196000
	stPhysicalDeviceShaderFloat16Int8                   = 1000082000
	stPhysicalDevice16BitStorage                        = 1000083000
	stPhysicalDeviceSubgroupSizeControlProperties       = 1000225000
	stPipelineShaderStageRequiredSubgroupSizeCreateInfo = 1000225001
	stPhysicalDeviceSubgroupSizeControlFeatures         = 1000225002
	stDebugUtilsMessengerCreateInfoEXT                  = 1000128004
	stValidationFeaturesEXT                             = 1000247000
	validationFeatureEnableSync                         = 4
	instanceCreateEnumeratePortability                  = 0x1
	debugSeverityWarning                                = 0x100
	debugSeverityError                                  = 0x1000
	debugTypeGeneral                                    = 0x1
	debugTypeValidation                                 = 0x2
	debugTypePerformance                                = 0x4
	queryTypeTimestamp                                  = 2
	pipelineStageTopOfPipe                              = 0x1
	pipelineStageComputeShader                          = 0x800
	pipelineStageTransfer                               = 0x1000
	pipelineStageBottomOfPipe                           = 0x2000
	pipelineStageHost                                   = 0x4000
	accessShaderRead                                    = 0x20
	accessShaderWrite                                   = 0x40
	accessTransferRead                                  = 0x800
	accessTransferWrite                                 = 0x1000
	accessHostRead                                      = 0x2000
	accessHostWrite                                     = 0x4000
	queryResult64                                       = 0x1
	queryResultWait                                     = 0x2
	pipelineBindPointCompute                            = 1
	descriptorTypeStorageBuffer                         = 7
	shaderStageCompute                                  = 0x20
	subgroupFeatureBasic                                = 0x1
	subgroupFeatureArithmetic                           = 0x4
	subgroupFeatureShuffle                              = 0x10
	commandPoolCreateResetCommandBuffer                 = 0x2
	commandBufferLevelPrimary                           = 0
	commandBufferUsageOneTimeSubmit                     = 0x1
	bufferUsageTransferSrc                              = 0x1
	bufferUsageTransferDst                              = 0x2
	bufferUsageStorageBuffer                            = 0x20
	sharingModeExclusive                                = 0
	memoryPropertyDeviceLocal                           = 0x1
	memoryPropertyHostVisible                           = 0x2
	memoryPropertyHostCoherent                          = 0x4
	memoryPropertyHostCached                            = 0x8
	memoryHeapDeviceLocal                               = 0x1
	queueGraphics                                       = 0x1
	queueCompute                                        = 0x2
	queueTransfer                                       = 0x4
	physicalDeviceTypeOther                             = 0
	physicalDeviceTypeIntegratedGPU                     = 1
	physicalDeviceTypeDiscreteGPU                       = 2
	physicalDeviceTypeVirtualGPU                        = 3
	physicalDeviceTypeCPU                               = 4
	wholeSize                                           = ^uint64(0)
)

// result is a VkResult.
type result int32

const (
	success                 result = 0
	notReady                result = 1
	timeout                 result = 2
	incomplete              result = 5
	errOutOfHostMemory      result = -1
	errOutOfDeviceMemory    result = -2
	errInitializationFailed result = -3
	errDeviceLost           result = -4
	errMemoryMapFailed      result = -5
	errLayerNotPresent      result = -6
	errExtensionNotPresent  result = -7
	errFeatureNotPresent    result = -8
	errIncompatibleDriver   result = -9
	errTooManyObjects       result = -10
	errFormatNotSupported   result = -11
	errFragmentedPool       result = -12
	errUnknown              result = -13
	errOutOfPoolMemory      result = -1000069000
	errFragmentation        result = -1000161000
	errInvalidShaderNV      result = -1000012000
	pipelineCompileRequired result = 1000297000
)

var resultNames = map[result]string{
	success:                 "VK_SUCCESS",
	notReady:                "VK_NOT_READY",
	timeout:                 "VK_TIMEOUT",
	incomplete:              "VK_INCOMPLETE",
	errOutOfHostMemory:      "VK_ERROR_OUT_OF_HOST_MEMORY",
	errOutOfDeviceMemory:    "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	errInitializationFailed: "VK_ERROR_INITIALIZATION_FAILED",
	errDeviceLost:           "VK_ERROR_DEVICE_LOST",
	errMemoryMapFailed:      "VK_ERROR_MEMORY_MAP_FAILED",
	errLayerNotPresent:      "VK_ERROR_LAYER_NOT_PRESENT",
	errExtensionNotPresent:  "VK_ERROR_EXTENSION_NOT_PRESENT",
	errFeatureNotPresent:    "VK_ERROR_FEATURE_NOT_PRESENT",
	errIncompatibleDriver:   "VK_ERROR_INCOMPATIBLE_DRIVER",
	errTooManyObjects:       "VK_ERROR_TOO_MANY_OBJECTS",
	errFormatNotSupported:   "VK_ERROR_FORMAT_NOT_SUPPORTED",
	errFragmentedPool:       "VK_ERROR_FRAGMENTED_POOL",
	errUnknown:              "VK_ERROR_UNKNOWN",
	errOutOfPoolMemory:      "VK_ERROR_OUT_OF_POOL_MEMORY",
	errFragmentation:        "VK_ERROR_FRAGMENTATION",
	errInvalidShaderNV:      "VK_ERROR_INVALID_SHADER_NV",
	pipelineCompileRequired: "VK_PIPELINE_COMPILE_REQUIRED",
}

func (r result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Structure types of the compute-unit counts (vk/matmul_tiles.go).
const (
	stPhysicalDeviceShaderCorePropertiesAMD      = 1000185000
	stPhysicalDeviceShaderSMBuiltinsPropertiesNV = 1000154001
)
