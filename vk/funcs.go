package vk

// globalFuncs are looked up with a null instance.
type globalFuncs struct {
	CreateInstance                       uintptr
	EnumerateInstanceVersion             uintptr
	EnumerateInstanceLayerProperties     uintptr
	EnumerateInstanceExtensionProperties uintptr
}

// instanceFuncs are looked up through vkGetInstanceProcAddr once an instance exists.
type instanceFuncs struct {
	DestroyInstance                        uintptr
	EnumeratePhysicalDevices               uintptr
	GetPhysicalDeviceProperties            uintptr
	GetPhysicalDeviceProperties2           uintptr
	GetPhysicalDeviceFeatures2             uintptr
	GetPhysicalDeviceMemoryProperties      uintptr
	GetPhysicalDeviceMemoryProperties2     uintptr
	GetPhysicalDeviceQueueFamilyProperties uintptr
	EnumerateDeviceExtensionProperties     uintptr
	CreateDevice                           uintptr
	GetDeviceProcAddr                      uintptr
}

// debugFuncs come from VK_EXT_debug_utils, present only when validation is on.
type debugFuncs struct {
	CreateDebugUtilsMessengerEXT  uintptr
	DestroyDebugUtilsMessengerEXT uintptr
}

// deviceFuncs are looked up through vkGetDeviceProcAddr, which skips the loader's dispatch.
type deviceFuncs struct {
	DestroyDevice                uintptr
	GetDeviceQueue               uintptr
	DeviceWaitIdle               uintptr
	QueueSubmit                  uintptr
	CreateBuffer                 uintptr
	DestroyBuffer                uintptr
	GetBufferMemoryRequirements  uintptr
	AllocateMemory               uintptr
	FreeMemory                   uintptr
	BindBufferMemory             uintptr
	MapMemory                    uintptr
	UnmapMemory                  uintptr
	FlushMappedMemoryRanges      uintptr
	InvalidateMappedMemoryRanges uintptr
	CreateShaderModule           uintptr
	DestroyShaderModule          uintptr
	CreatePipelineCache          uintptr
	DestroyPipelineCache         uintptr
	GetPipelineCacheData         uintptr
	CreateComputePipelines       uintptr
	DestroyPipeline              uintptr
	CreatePipelineLayout         uintptr
	DestroyPipelineLayout        uintptr
	CreateDescriptorSetLayout    uintptr
	DestroyDescriptorSetLayout   uintptr
	CreateDescriptorPool         uintptr
	DestroyDescriptorPool        uintptr
	ResetDescriptorPool          uintptr
	AllocateDescriptorSets       uintptr
	UpdateDescriptorSets         uintptr
	CreateCommandPool            uintptr
	DestroyCommandPool           uintptr
	AllocateCommandBuffers       uintptr
	BeginCommandBuffer           uintptr
	EndCommandBuffer             uintptr
	ResetCommandBuffer           uintptr
	CmdBindPipeline              uintptr
	CmdBindDescriptorSets        uintptr
	CmdPushConstants             uintptr
	CmdDispatch                  uintptr
	CmdPipelineBarrier           uintptr
	CmdCopyBuffer                uintptr
	CmdFillBuffer                uintptr
	CmdResetQueryPool            uintptr
	CmdWriteTimestamp            uintptr
	CreateFence                  uintptr
	DestroyFence                 uintptr
	WaitForFences                uintptr
	ResetFences                  uintptr
	CreateQueryPool              uintptr
	DestroyQueryPool             uintptr
	GetQueryPoolResults          uintptr
}
