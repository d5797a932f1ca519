package vk

// Hand-written mirrors of the Vulkan C structs vkgrad uses (64-bit layout). Pointers are
// unsafe.Pointer so the garbage collector keeps what they point at alive while a call runs;
// dispatchable handles are uintptr and non-dispatchable handles uint64, as in the C ABI.
// layout_test.go checks every size and offset against vulkan_core.h.

import "unsafe"

// applicationInfo mirrors VkApplicationInfo.
type applicationInfo struct {
	SType              uint32
	PNext              unsafe.Pointer
	PApplicationName   unsafe.Pointer
	ApplicationVersion uint32
	PEngineName        unsafe.Pointer
	EngineVersion      uint32
	ApiVersion         uint32
}

// instanceCreateInfo mirrors VkInstanceCreateInfo.
type instanceCreateInfo struct {
	SType                   uint32
	PNext                   unsafe.Pointer
	Flags                   uint32
	PApplicationInfo        unsafe.Pointer
	EnabledLayerCount       uint32
	PpEnabledLayerNames     unsafe.Pointer
	EnabledExtensionCount   uint32
	PpEnabledExtensionNames unsafe.Pointer
}

// debugUtilsMessengerCreateInfoEXT mirrors VkDebugUtilsMessengerCreateInfoEXT.
type debugUtilsMessengerCreateInfoEXT struct {
	SType           uint32
	PNext           unsafe.Pointer
	Flags           uint32
	MessageSeverity uint32
	MessageType     uint32
	PfnUserCallback uintptr
	PUserData       uintptr // an integer id, see debugCallback
}

// debugUtilsMessengerCallbackDataEXT mirrors VkDebugUtilsMessengerCallbackDataEXT.
type debugUtilsMessengerCallbackDataEXT struct {
	SType            uint32
	PNext            unsafe.Pointer
	Flags            uint32
	PMessageIdName   unsafe.Pointer
	MessageIdNumber  int32
	PMessage         unsafe.Pointer
	QueueLabelCount  uint32
	PQueueLabels     unsafe.Pointer
	CmdBufLabelCount uint32
	PCmdBufLabels    unsafe.Pointer
	ObjectCount      uint32
	PObjects         unsafe.Pointer
}

// layerProperties mirrors VkLayerProperties.
type layerProperties struct {
	LayerName             [256]byte
	SpecVersion           uint32
	ImplementationVersion uint32
	Description           [256]byte
}

// extensionProperties mirrors VkExtensionProperties.
type extensionProperties struct {
	ExtensionName [256]byte
	SpecVersion   uint32
}

// physicalDeviceLimits mirrors VkPhysicalDeviceLimits.
type physicalDeviceLimits struct {
	MaxImageDimension1D                             uint32
	MaxImageDimension2D                             uint32
	MaxImageDimension3D                             uint32
	MaxImageDimensionCube                           uint32
	MaxImageArrayLayers                             uint32
	MaxTexelBufferElements                          uint32
	MaxUniformBufferRange                           uint32
	MaxStorageBufferRange                           uint32
	MaxPushConstantsSize                            uint32
	MaxMemoryAllocationCount                        uint32
	MaxSamplerAllocationCount                       uint32
	BufferImageGranularity                          uint64
	SparseAddressSpaceSize                          uint64
	MaxBoundDescriptorSets                          uint32
	MaxPerStageDescriptorSamplers                   uint32
	MaxPerStageDescriptorUniformBuffers             uint32
	MaxPerStageDescriptorStorageBuffers             uint32
	MaxPerStageDescriptorSampledImages              uint32
	MaxPerStageDescriptorStorageImages              uint32
	MaxPerStageDescriptorInputAttachments           uint32
	MaxPerStageResources                            uint32
	MaxDescriptorSetSamplers                        uint32
	MaxDescriptorSetUniformBuffers                  uint32
	MaxDescriptorSetUniformBuffersDynamic           uint32
	MaxDescriptorSetStorageBuffers                  uint32
	MaxDescriptorSetStorageBuffersDynamic           uint32
	MaxDescriptorSetSampledImages                   uint32
	MaxDescriptorSetStorageImages                   uint32
	MaxDescriptorSetInputAttachments                uint32
	MaxVertexInputAttributes                        uint32
	MaxVertexInputBindings                          uint32
	MaxVertexInputAttributeOffset                   uint32
	MaxVertexInputBindingStride                     uint32
	MaxVertexOutputComponents                       uint32
	MaxTessellationGenerationLevel                  uint32
	MaxTessellationPatchSize                        uint32
	MaxTessellationControlPerVertexInputComponents  uint32
	MaxTessellationControlPerVertexOutputComponents uint32
	MaxTessellationControlPerPatchOutputComponents  uint32
	MaxTessellationControlTotalOutputComponents     uint32
	MaxTessellationEvaluationInputComponents        uint32
	MaxTessellationEvaluationOutputComponents       uint32
	MaxGeometryShaderInvocations                    uint32
	MaxGeometryInputComponents                      uint32
	MaxGeometryOutputComponents                     uint32
	MaxGeometryOutputVertices                       uint32
	MaxGeometryTotalOutputComponents                uint32
	MaxFragmentInputComponents                      uint32
	MaxFragmentOutputAttachments                    uint32
	MaxFragmentDualSrcAttachments                   uint32
	MaxFragmentCombinedOutputResources              uint32
	MaxComputeSharedMemorySize                      uint32
	MaxComputeWorkGroupCount                        [3]uint32
	MaxComputeWorkGroupInvocations                  uint32
	MaxComputeWorkGroupSize                         [3]uint32
	SubPixelPrecisionBits                           uint32
	SubTexelPrecisionBits                           uint32
	MipmapPrecisionBits                             uint32
	MaxDrawIndexedIndexValue                        uint32
	MaxDrawIndirectCount                            uint32
	MaxSamplerLodBias                               float32
	MaxSamplerAnisotropy                            float32
	MaxViewports                                    uint32
	MaxViewportDimensions                           [2]uint32
	ViewportBoundsRange                             [2]float32
	ViewportSubPixelBits                            uint32
	MinMemoryMapAlignment                           uintptr
	MinTexelBufferOffsetAlignment                   uint64
	MinUniformBufferOffsetAlignment                 uint64
	MinStorageBufferOffsetAlignment                 uint64
	MinTexelOffset                                  int32
	MaxTexelOffset                                  uint32
	MinTexelGatherOffset                            int32
	MaxTexelGatherOffset                            uint32
	MinInterpolationOffset                          float32
	MaxInterpolationOffset                          float32
	SubPixelInterpolationOffsetBits                 uint32
	MaxFramebufferWidth                             uint32
	MaxFramebufferHeight                            uint32
	MaxFramebufferLayers                            uint32
	FramebufferColorSampleCounts                    uint32
	FramebufferDepthSampleCounts                    uint32
	FramebufferStencilSampleCounts                  uint32
	FramebufferNoAttachmentsSampleCounts            uint32
	MaxColorAttachments                             uint32
	SampledImageColorSampleCounts                   uint32
	SampledImageIntegerSampleCounts                 uint32
	SampledImageDepthSampleCounts                   uint32
	SampledImageStencilSampleCounts                 uint32
	StorageImageSampleCounts                        uint32
	MaxSampleMaskWords                              uint32
	TimestampComputeAndGraphics                     uint32
	TimestampPeriod                                 float32
	MaxClipDistances                                uint32
	MaxCullDistances                                uint32
	MaxCombinedClipAndCullDistances                 uint32
	DiscreteQueuePriorities                         uint32
	PointSizeRange                                  [2]float32
	LineWidthRange                                  [2]float32
	PointSizeGranularity                            float32
	LineWidthGranularity                            float32
	StrictLines                                     uint32
	StandardSampleLocations                         uint32
	OptimalBufferCopyOffsetAlignment                uint64
	OptimalBufferCopyRowPitchAlignment              uint64
	NonCoherentAtomSize                             uint64
}

// physicalDeviceSparseProperties mirrors VkPhysicalDeviceSparseProperties.
type physicalDeviceSparseProperties struct {
	ResidencyStandard2DBlockShape            uint32
	ResidencyStandard2DMultisampleBlockShape uint32
	ResidencyStandard3DBlockShape            uint32
	ResidencyAlignedMipSize                  uint32
	ResidencyNonResidentStrict               uint32
}

// physicalDeviceProperties mirrors VkPhysicalDeviceProperties.
type physicalDeviceProperties struct {
	ApiVersion        uint32
	DriverVersion     uint32
	VendorID          uint32
	DeviceID          uint32
	DeviceType        uint32
	DeviceName        [256]byte
	PipelineCacheUUID [16]uint8
	Limits            physicalDeviceLimits
	SparseProperties  physicalDeviceSparseProperties
}

// physicalDeviceProperties2 mirrors VkPhysicalDeviceProperties2.
type physicalDeviceProperties2 struct {
	SType      uint32
	PNext      unsafe.Pointer
	Properties physicalDeviceProperties
}

// physicalDeviceMaintenance3Properties mirrors VkPhysicalDeviceMaintenance3Properties (1.1).
type physicalDeviceMaintenance3Properties struct {
	SType                   uint32
	PNext                   unsafe.Pointer
	MaxPerSetDescriptors    uint32
	MaxMemoryAllocationSize uint64
}

// physicalDeviceMaintenance4Properties mirrors VkPhysicalDeviceMaintenance4Properties (1.3).
type physicalDeviceMaintenance4Properties struct {
	SType         uint32
	PNext         unsafe.Pointer
	MaxBufferSize uint64
}

// physicalDeviceMemoryBudgetPropertiesEXT mirrors VkPhysicalDeviceMemoryBudgetPropertiesEXT.
type physicalDeviceMemoryBudgetPropertiesEXT struct {
	SType      uint32
	PNext      unsafe.Pointer
	HeapBudget [16]uint64
	HeapUsage  [16]uint64
}

// physicalDeviceMemoryProperties2 mirrors VkPhysicalDeviceMemoryProperties2.
type physicalDeviceMemoryProperties2 struct {
	SType            uint32
	PNext            unsafe.Pointer
	MemoryProperties physicalDeviceMemoryProperties
}

// physicalDeviceDriverProperties mirrors VkPhysicalDeviceDriverProperties.
type physicalDeviceDriverProperties struct {
	SType              uint32
	PNext              unsafe.Pointer
	DriverID           uint32
	DriverName         [256]byte
	DriverInfo         [256]byte
	ConformanceVersion conformanceVersion
}

// conformanceVersion mirrors VkConformanceVersion.
type conformanceVersion struct {
	Major    uint8
	Minor    uint8
	Subminor uint8
	Patch    uint8
}

// physicalDeviceSubgroupProperties mirrors VkPhysicalDeviceSubgroupProperties.
type physicalDeviceSubgroupProperties struct {
	SType                     uint32
	PNext                     unsafe.Pointer
	SubgroupSize              uint32
	SupportedStages           uint32
	SupportedOperations       uint32
	QuadOperationsInAllStages uint32
}

// physicalDeviceSubgroupSizeControlProperties mirrors VkPhysicalDeviceSubgroupSizeControlProperties
// (Vulkan 1.3, VK_EXT_subgroup_size_control).
type physicalDeviceSubgroupSizeControlProperties struct {
	SType                        uint32
	PNext                        unsafe.Pointer
	MinSubgroupSize              uint32
	MaxSubgroupSize              uint32
	MaxComputeWorkgroupSubgroups uint32
	RequiredSubgroupSizeStages   uint32
}

// physicalDeviceSubgroupSizeControlFeatures mirrors VkPhysicalDeviceSubgroupSizeControlFeatures.
type physicalDeviceSubgroupSizeControlFeatures struct {
	SType                uint32
	PNext                unsafe.Pointer
	SubgroupSizeControl  uint32
	ComputeFullSubgroups uint32
}

// pipelineShaderStageRequiredSubgroupSizeCreateInfo mirrors
// VkPipelineShaderStageRequiredSubgroupSizeCreateInfo.
type pipelineShaderStageRequiredSubgroupSizeCreateInfo struct {
	SType                uint32
	PNext                unsafe.Pointer
	RequiredSubgroupSize uint32
}

// physicalDeviceIDProperties mirrors VkPhysicalDeviceIDProperties.
type physicalDeviceIDProperties struct {
	SType           uint32
	PNext           unsafe.Pointer
	DeviceUUID      [16]uint8
	DriverUUID      [16]uint8
	DeviceLUID      [8]uint8
	DeviceNodeMask  uint32
	DeviceLUIDValid uint32
}

// physicalDeviceFeatures mirrors VkPhysicalDeviceFeatures.
type physicalDeviceFeatures struct {
	RobustBufferAccess                      uint32
	FullDrawIndexUint32                     uint32
	ImageCubeArray                          uint32
	IndependentBlend                        uint32
	GeometryShader                          uint32
	TessellationShader                      uint32
	SampleRateShading                       uint32
	DualSrcBlend                            uint32
	LogicOp                                 uint32
	MultiDrawIndirect                       uint32
	DrawIndirectFirstInstance               uint32
	DepthClamp                              uint32
	DepthBiasClamp                          uint32
	FillModeNonSolid                        uint32
	DepthBounds                             uint32
	WideLines                               uint32
	LargePoints                             uint32
	AlphaToOne                              uint32
	MultiViewport                           uint32
	SamplerAnisotropy                       uint32
	TextureCompressionETC2                  uint32
	TextureCompressionASTC_LDR              uint32
	TextureCompressionBC                    uint32
	OcclusionQueryPrecise                   uint32
	PipelineStatisticsQuery                 uint32
	VertexPipelineStoresAndAtomics          uint32
	FragmentStoresAndAtomics                uint32
	ShaderTessellationAndGeometryPointSize  uint32
	ShaderImageGatherExtended               uint32
	ShaderStorageImageExtendedFormats       uint32
	ShaderStorageImageMultisample           uint32
	ShaderStorageImageReadWithoutFormat     uint32
	ShaderStorageImageWriteWithoutFormat    uint32
	ShaderUniformBufferArrayDynamicIndexing uint32
	ShaderSampledImageArrayDynamicIndexing  uint32
	ShaderStorageBufferArrayDynamicIndexing uint32
	ShaderStorageImageArrayDynamicIndexing  uint32
	ShaderClipDistance                      uint32
	ShaderCullDistance                      uint32
	ShaderFloat64                           uint32
	ShaderInt64                             uint32
	ShaderInt16                             uint32
	ShaderResourceResidency                 uint32
	ShaderResourceMinLod                    uint32
	SparseBinding                           uint32
	SparseResidencyBuffer                   uint32
	SparseResidencyImage2D                  uint32
	SparseResidencyImage3D                  uint32
	SparseResidency2Samples                 uint32
	SparseResidency4Samples                 uint32
	SparseResidency8Samples                 uint32
	SparseResidency16Samples                uint32
	SparseResidencyAliased                  uint32
	VariableMultisampleRate                 uint32
	InheritedQueries                        uint32
}

// physicalDeviceFeatures2 mirrors VkPhysicalDeviceFeatures2.
type physicalDeviceFeatures2 struct {
	SType    uint32
	PNext    unsafe.Pointer
	Features physicalDeviceFeatures
}

// physicalDeviceShaderFloat16Int8Features mirrors VkPhysicalDeviceShaderFloat16Int8Features.
type physicalDeviceShaderFloat16Int8Features struct {
	SType         uint32
	PNext         unsafe.Pointer
	ShaderFloat16 uint32
	ShaderInt8    uint32
}

// physicalDevice16BitStorageFeatures mirrors VkPhysicalDevice16BitStorageFeatures.
type physicalDevice16BitStorageFeatures struct {
	SType                              uint32
	PNext                              unsafe.Pointer
	StorageBuffer16BitAccess           uint32
	UniformAndStorageBuffer16BitAccess uint32
	StoragePushConstant16              uint32
	StorageInputOutput16               uint32
}

// memoryType mirrors VkMemoryType.
type memoryType struct {
	PropertyFlags uint32
	HeapIndex     uint32
}

// memoryHeap mirrors VkMemoryHeap.
type memoryHeap struct {
	Size  uint64
	Flags uint32
}

// physicalDeviceMemoryProperties mirrors VkPhysicalDeviceMemoryProperties.
type physicalDeviceMemoryProperties struct {
	MemoryTypeCount uint32
	MemoryTypes     [32]memoryType
	MemoryHeapCount uint32
	MemoryHeaps     [16]memoryHeap
}

// extent3D mirrors VkExtent3D.
type extent3D struct {
	Width  uint32
	Height uint32
	Depth  uint32
}

// queueFamilyProperties mirrors VkQueueFamilyProperties.
type queueFamilyProperties struct {
	QueueFlags                  uint32
	QueueCount                  uint32
	TimestampValidBits          uint32
	MinImageTransferGranularity extent3D
}

// deviceQueueCreateInfo mirrors VkDeviceQueueCreateInfo.
type deviceQueueCreateInfo struct {
	SType            uint32
	PNext            unsafe.Pointer
	Flags            uint32
	QueueFamilyIndex uint32
	QueueCount       uint32
	PQueuePriorities unsafe.Pointer
}

// deviceCreateInfo mirrors VkDeviceCreateInfo.
type deviceCreateInfo struct {
	SType                   uint32
	PNext                   unsafe.Pointer
	Flags                   uint32
	QueueCreateInfoCount    uint32
	PQueueCreateInfos       unsafe.Pointer
	EnabledLayerCount       uint32
	PpEnabledLayerNames     unsafe.Pointer
	EnabledExtensionCount   uint32
	PpEnabledExtensionNames unsafe.Pointer
	PEnabledFeatures        unsafe.Pointer
}

// bufferCreateInfo mirrors VkBufferCreateInfo.
type bufferCreateInfo struct {
	SType                 uint32
	PNext                 unsafe.Pointer
	Flags                 uint32
	Size                  uint64
	Usage                 uint32
	SharingMode           uint32
	QueueFamilyIndexCount uint32
	PQueueFamilyIndices   unsafe.Pointer
}

// memoryRequirements mirrors VkMemoryRequirements.
type memoryRequirements struct {
	Size           uint64
	Alignment      uint64
	MemoryTypeBits uint32
}

// memoryAllocateInfo mirrors VkMemoryAllocateInfo.
type memoryAllocateInfo struct {
	SType           uint32
	PNext           unsafe.Pointer
	AllocationSize  uint64
	MemoryTypeIndex uint32
}

// mappedMemoryRange mirrors VkMappedMemoryRange.
type mappedMemoryRange struct {
	SType  uint32
	PNext  unsafe.Pointer
	Memory uint64
	Offset uint64
	Size   uint64
}

// shaderModuleCreateInfo mirrors VkShaderModuleCreateInfo.
type shaderModuleCreateInfo struct {
	SType    uint32
	PNext    unsafe.Pointer
	Flags    uint32
	CodeSize uintptr
	PCode    unsafe.Pointer
}

// pipelineCacheCreateInfo mirrors VkPipelineCacheCreateInfo.
type pipelineCacheCreateInfo struct {
	SType           uint32
	PNext           unsafe.Pointer
	Flags           uint32
	InitialDataSize uintptr
	PInitialData    unsafe.Pointer
}

// specializationMapEntry mirrors VkSpecializationMapEntry.
type specializationMapEntry struct {
	ConstantID uint32
	Offset     uint32
	Size       uintptr
}

// specializationInfo mirrors VkSpecializationInfo.
type specializationInfo struct {
	MapEntryCount uint32
	PMapEntries   unsafe.Pointer
	DataSize      uintptr
	PData         unsafe.Pointer
}

// pipelineShaderStageCreateInfo mirrors VkPipelineShaderStageCreateInfo.
type pipelineShaderStageCreateInfo struct {
	SType               uint32
	PNext               unsafe.Pointer
	Flags               uint32
	Stage               uint32
	Module              uint64
	PName               unsafe.Pointer
	PSpecializationInfo unsafe.Pointer
}

// computePipelineCreateInfo mirrors VkComputePipelineCreateInfo.
type computePipelineCreateInfo struct {
	SType              uint32
	PNext              unsafe.Pointer
	Flags              uint32
	Stage              pipelineShaderStageCreateInfo
	Layout             uint64
	BasePipelineHandle uint64
	BasePipelineIndex  int32
}

// descriptorSetLayoutBinding mirrors VkDescriptorSetLayoutBinding.
type descriptorSetLayoutBinding struct {
	Binding            uint32
	DescriptorType     uint32
	DescriptorCount    uint32
	StageFlags         uint32
	PImmutableSamplers unsafe.Pointer
}

// descriptorSetLayoutCreateInfo mirrors VkDescriptorSetLayoutCreateInfo.
type descriptorSetLayoutCreateInfo struct {
	SType        uint32
	PNext        unsafe.Pointer
	Flags        uint32
	BindingCount uint32
	PBindings    unsafe.Pointer
}

// pushConstantRange mirrors VkPushConstantRange.
type pushConstantRange struct {
	StageFlags uint32
	Offset     uint32
	Size       uint32
}

// pipelineLayoutCreateInfo mirrors VkPipelineLayoutCreateInfo.
type pipelineLayoutCreateInfo struct {
	SType                  uint32
	PNext                  unsafe.Pointer
	Flags                  uint32
	SetLayoutCount         uint32
	PSetLayouts            unsafe.Pointer
	PushConstantRangeCount uint32
	PPushConstantRanges    unsafe.Pointer
}

// descriptorPoolSize mirrors VkDescriptorPoolSize.
type descriptorPoolSize struct {
	Type            uint32
	DescriptorCount uint32
}

// descriptorPoolCreateInfo mirrors VkDescriptorPoolCreateInfo.
type descriptorPoolCreateInfo struct {
	SType         uint32
	PNext         unsafe.Pointer
	Flags         uint32
	MaxSets       uint32
	PoolSizeCount uint32
	PPoolSizes    unsafe.Pointer
}

// descriptorSetAllocateInfo mirrors VkDescriptorSetAllocateInfo.
type descriptorSetAllocateInfo struct {
	SType              uint32
	PNext              unsafe.Pointer
	DescriptorPool     uint64
	DescriptorSetCount uint32
	PSetLayouts        unsafe.Pointer
}

// descriptorBufferInfo mirrors VkDescriptorBufferInfo.
type descriptorBufferInfo struct {
	Buffer uint64
	Offset uint64
	Range  uint64
}

// writeDescriptorSet mirrors VkWriteDescriptorSet.
type writeDescriptorSet struct {
	SType            uint32
	PNext            unsafe.Pointer
	DstSet           uint64
	DstBinding       uint32
	DstArrayElement  uint32
	DescriptorCount  uint32
	DescriptorType   uint32
	PImageInfo       unsafe.Pointer
	PBufferInfo      unsafe.Pointer
	PTexelBufferView unsafe.Pointer
}

// commandPoolCreateInfo mirrors VkCommandPoolCreateInfo.
type commandPoolCreateInfo struct {
	SType            uint32
	PNext            unsafe.Pointer
	Flags            uint32
	QueueFamilyIndex uint32
}

// commandBufferAllocateInfo mirrors VkCommandBufferAllocateInfo.
type commandBufferAllocateInfo struct {
	SType              uint32
	PNext              unsafe.Pointer
	CommandPool        uint64
	Level              uint32
	CommandBufferCount uint32
}

// commandBufferBeginInfo mirrors VkCommandBufferBeginInfo.
type commandBufferBeginInfo struct {
	SType            uint32
	PNext            unsafe.Pointer
	Flags            uint32
	PInheritanceInfo unsafe.Pointer
}

// memoryBarrier mirrors VkMemoryBarrier.
type memoryBarrier struct {
	SType         uint32
	PNext         unsafe.Pointer
	SrcAccessMask uint32
	DstAccessMask uint32
}

// bufferCopy mirrors VkBufferCopy.
type bufferCopy struct {
	SrcOffset uint64
	DstOffset uint64
	Size      uint64
}

// submitInfo mirrors VkSubmitInfo.
type submitInfo struct {
	SType                uint32
	PNext                unsafe.Pointer
	WaitSemaphoreCount   uint32
	PWaitSemaphores      unsafe.Pointer
	PWaitDstStageMask    unsafe.Pointer
	CommandBufferCount   uint32
	PCommandBuffers      unsafe.Pointer
	SignalSemaphoreCount uint32
	PSignalSemaphores    unsafe.Pointer
}

// fenceCreateInfo mirrors VkFenceCreateInfo.
type fenceCreateInfo struct {
	SType uint32
	PNext unsafe.Pointer
	Flags uint32
}

// queryPoolCreateInfo mirrors VkQueryPoolCreateInfo.
type queryPoolCreateInfo struct {
	SType              uint32
	PNext              unsafe.Pointer
	Flags              uint32
	QueryType          uint32
	QueryCount         uint32
	PipelineStatistics uint32
}

// validationFeaturesEXT mirrors VkValidationFeaturesEXT.
type validationFeaturesEXT struct {
	SType                          uint32
	PNext                          unsafe.Pointer
	EnabledValidationFeatureCount  uint32
	PEnabledValidationFeatures     unsafe.Pointer
	DisabledValidationFeatureCount uint32
	PDisabledValidationFeatures    unsafe.Pointer
}

// physicalDeviceShaderCorePropertiesAMD mirrors VkPhysicalDeviceShaderCorePropertiesAMD.
type physicalDeviceShaderCorePropertiesAMD struct {
	SType                      uint32
	PNext                      unsafe.Pointer
	ShaderEngineCount          uint32
	ShaderArraysPerEngineCount uint32
	ComputeUnitsPerShaderArray uint32
	SimdPerComputeUnit         uint32
	WavefrontsPerSimd          uint32
	WavefrontSize              uint32
	SgprsPerSimd               uint32
	MinSgprAllocation          uint32
	MaxSgprAllocation          uint32
	SgprAllocationGranularity  uint32
	VgprsPerSimd               uint32
	MinVgprAllocation          uint32
	MaxVgprAllocation          uint32
	VgprAllocationGranularity  uint32
}

// physicalDeviceShaderSMBuiltinsPropertiesNV mirrors VkPhysicalDeviceShaderSMBuiltinsPropertiesNV.
type physicalDeviceShaderSMBuiltinsPropertiesNV struct {
	SType            uint32
	PNext            unsafe.Pointer
	ShaderSMCount    uint32
	ShaderWarpsPerSM uint32
}

// physicalDeviceVulkanMemoryModelFeatures mirrors VkPhysicalDeviceVulkanMemoryModelFeatures.
type physicalDeviceVulkanMemoryModelFeatures struct {
	SType                                         uint32
	PNext                                         unsafe.Pointer
	VulkanMemoryModel                             uint32
	VulkanMemoryModelDeviceScope                  uint32
	VulkanMemoryModelAvailabilityVisibilityChains uint32
}

// physicalDeviceCooperativeMatrixFeaturesNV mirrors VkPhysicalDeviceCooperativeMatrixFeaturesNV.
type physicalDeviceCooperativeMatrixFeaturesNV struct {
	SType                               uint32
	PNext                               unsafe.Pointer
	CooperativeMatrix                   uint32
	CooperativeMatrixRobustBufferAccess uint32
}

// physicalDeviceCooperativeMatrixPropertiesNV mirrors
// VkPhysicalDeviceCooperativeMatrixPropertiesNV.
type physicalDeviceCooperativeMatrixPropertiesNV struct {
	SType                            uint32
	PNext                            unsafe.Pointer
	CooperativeMatrixSupportedStages uint32
}

// cooperativeMatrixPropertiesNV mirrors VkCooperativeMatrixPropertiesNV.
type cooperativeMatrixPropertiesNV struct {
	SType uint32
	PNext unsafe.Pointer
	MSize uint32 `c:"MSize"`
	NSize uint32 `c:"NSize"`
	KSize uint32 `c:"KSize"`
	AType uint32 `c:"AType"`
	BType uint32 `c:"BType"`
	CType uint32 `c:"CType"`
	DType uint32 `c:"DType"`
	Scope uint32
}
