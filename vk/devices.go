package vk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
)

// DeviceType is a VkPhysicalDeviceType.
type DeviceType uint32

const (
	DeviceOther      DeviceType = physicalDeviceTypeOther
	DeviceIntegrated DeviceType = physicalDeviceTypeIntegratedGPU
	DeviceDiscrete   DeviceType = physicalDeviceTypeDiscreteGPU
	DeviceVirtual    DeviceType = physicalDeviceTypeVirtualGPU
	DeviceCPU        DeviceType = physicalDeviceTypeCPU
)

func (t DeviceType) String() string {
	switch t {
	case DeviceIntegrated:
		return "integrated"
	case DeviceDiscrete:
		return "discrete"
	case DeviceVirtual:
		return "virtual"
	case DeviceCPU:
		return "cpu"
	}
	return "other"
}

// MemoryHeap is one VkMemoryHeap.
type MemoryHeap struct {
	Size        uint64 // bytes
	DeviceLocal bool
}

// DeviceInfo describes a physical device: everything `vkgrad devices` shows and the limits the
// runtime relies on.
type DeviceInfo struct {
	Index         int // position in vkEnumeratePhysicalDevices order: the N of vulkan:N
	Name          string
	Type          DeviceType
	VendorID      uint32
	DeviceID      uint32
	Vendor        string // a name for VendorID, or its hex value
	DriverName    string // VkPhysicalDeviceDriverProperties, empty before Vulkan 1.2 without the extension
	DriverInfo    string
	DriverVersion uint32 // vendor-specific packing; see DriverVersionString
	APIVersion    uint32 // packed; see APIVersionString
	UUID          [16]byte
	Heaps         []MemoryHeap
	SubgroupSize  uint32
	ComputeUnits  uint32 // AMD CUs or NVIDIA SMs where the driver reports them, else 0
	Float16       bool   // shaderFloat16
	// SubgroupArithmetic is set when compute shaders may use basic and arithmetic subgroup
	// operations (VkPhysicalDeviceSubgroupProperties), which the reduction kernels' subgroup
	// variants need.
	SubgroupArithmetic bool
	// SubgroupShuffle is set when compute shaders may use subgroup shuffles, which the CPU
	// matmul kernel reads its shared rows with.
	SubgroupShuffle bool
	// CoopMatShapes are the cooperative-matrix products compute shaders may use
	// (VK_KHR_cooperative_matrix with its feature on for the compute stage), nil without.
	CoopMatShapes []CoopMatShape
	// CoopMatNVShapes are those of VK_NV_cooperative_matrix (NVIDIA), whose matmul kernel is
	// preferred where both run; VulkanMemoryModel is the feature both kernels' SPIR-V declares.
	CoopMatNVShapes   []CoopMatShape
	VulkanMemoryModel bool
	// MinSubgroupSize and MaxSubgroupSize bound the subgroup size a compute pipeline may
	// require, and MaxComputeWorkgroupSubgroups the subgroups of its workgroup (Vulkan 1.3 or
	// VK_EXT_subgroup_size_control); zeros when the device cannot fix compute subgroup sizes.
	MinSubgroupSize, MaxSubgroupSize uint32
	MaxComputeWorkgroupSubgroups     uint32

	// MaxMemoryAllocationSize bounds one VkDeviceMemory allocation (Vulkan 1.1), MaxBufferSize
	// one VkBuffer (1.3 or VK_KHR_maintenance4; 0 when the device does not say). Drivers differ
	// widely: AMD on Windows 2 GiB, RADV and ANV about 4 GiB, lavapipe 2 GiB.
	MaxMemoryAllocationSize uint64
	MaxBufferSize           uint64
	// HeapBudget is, per heap, how much this process may allocate now (VK_EXT_memory_budget),
	// nil when the device cannot say.
	HeapBudget []uint64

	MaxStorageBufferRange           uint32
	MaxComputeWorkGroupSize         [3]uint32
	MaxComputeWorkGroupCount        [3]uint32
	MaxComputeWorkGroupInvocations  uint32
	MaxComputeSharedMemorySize      uint32
	MaxPushConstantsSize            uint32
	MinStorageBufferOffsetAlignment uint64
	TimestampPeriod                 float32 // nanoseconds per timestamp tick
	TimestampBits                   uint32  // valid bits of the compute queue's timestamps, 0 if none

	ComputeQueueFamily int    // -1 when the device has no compute queue
	Unusable           string // why vkgrad cannot use this device, empty when it can
	extensions         map[string]bool
	pipelineCacheUUID  [16]byte
}

// APIVersionString formats the device's Vulkan version, e.g. "1.3.230".
func (d DeviceInfo) APIVersionString() string { return versionString(d.APIVersion) }

// DriverVersionString decodes the driver version with the vendor's packing where known.
func (d DeviceInfo) DriverVersionString() string {
	v := d.DriverVersion
	switch d.VendorID {
	case 0x10DE: // NVIDIA: 10.8.8.6 bits
		return fmt.Sprintf("%d.%d.%d.%d", v>>22&0x3ff, v>>14&0xff, v>>6&0xff, v&0x3f)
	case 0x8086: // Intel on Windows: 18.14 bits; elsewhere Mesa uses the Vulkan packing
		if strings.Contains(strings.ToLower(d.DriverName), "windows") {
			return fmt.Sprintf("%d.%d", v>>14, v&0x3fff)
		}
	}
	return versionString(v)
}

// AllocationLimit is the largest single allocation and buffer vkgrad makes on the device:
// the smaller of MaxMemoryAllocationSize and MaxBufferSize, leaving out what a device does not
// report.
func (d DeviceInfo) AllocationLimit() uint64 {
	limit := uint64(1) << 62
	for _, v := range []uint64{d.MaxMemoryAllocationSize, d.MaxBufferSize} {
		if v > 0 {
			limit = min(limit, v)
		}
	}
	return limit
}

// DeviceLocalBudget is what this process may still allocate in device-local heaps: the
// memory budget where the device reports one, else the heaps' size.
func (d DeviceInfo) DeviceLocalBudget() uint64 {
	if d.HeapBudget == nil {
		return d.DeviceLocalBytes()
	}
	var n uint64
	for i, h := range d.Heaps {
		if h.DeviceLocal && i < len(d.HeapBudget) {
			n += d.HeapBudget[i]
		}
	}
	return n
}

// DeviceLocalBytes is the total size of the device-local heaps.
func (d DeviceInfo) DeviceLocalBytes() uint64 {
	var n uint64
	for _, h := range d.Heaps {
		if h.DeviceLocal {
			n += h.Size
		}
	}
	return n
}

var vendorNames = map[uint32]string{
	0x1002:  "AMD",
	0x1010:  "Imagination",
	0x106B:  "Apple",
	0x10DE:  "NVIDIA",
	0x13B5:  "ARM",
	0x14E4:  "Broadcom",
	0x1AE0:  "Google",
	0x5143:  "Qualcomm",
	0x8086:  "Intel",
	0x10001: "Vivante",
	0x10002: "VeriSilicon",
	0x10003: "Kazan",
	0x10004: "Codeplay",
	0x10005: "Mesa",
	0x10006: "PoCL",
	0x10007: "Mobileye",
}

// VendorName names a PCI or Khronos vendor id, or formats it in hex.
func VendorName(id uint32) string {
	if n, ok := vendorNames[id]; ok {
		return n
	}
	return fmt.Sprintf("0x%04x", id)
}

// Devices lists the Vulkan devices the loader reports, with their properties. It returns an
// error wrapping ErrNoLoader when no loader is installed.
func Devices() ([]DeviceInfo, error) {
	inst, err := NewInstance(InstanceOptions{})
	if err != nil {
		return nil, err
	}
	defer inst.Close()
	return inst.Devices()
}

// physicalDevices returns the handles in enumeration order.
func (i *Instance) physicalDevices() ([]uintptr, error) {
	var n uint32
	if err := check("vkEnumeratePhysicalDevices", call(i.fn.EnumeratePhysicalDevices, i.handle, uintptr(unsafe.Pointer(&n)), 0)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	hs := make([]uintptr, n)
	if err := check("vkEnumeratePhysicalDevices", call(i.fn.EnumeratePhysicalDevices, i.handle, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&hs[0])))); err != nil {
		return nil, err
	}
	return hs[:n], nil
}

// Devices lists this instance's physical devices.
func (i *Instance) Devices() ([]DeviceInfo, error) {
	hs, err := i.physicalDevices()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, len(hs))
	for k, h := range hs {
		d, err := i.describe(h)
		if err != nil {
			return nil, fmt.Errorf("vk: device %d: %w", k, err)
		}
		d.Index = k
		out[k] = d
	}
	return out, nil
}

func (i *Instance) deviceExtensions(pd uintptr) (map[string]bool, error) {
	var n uint32
	if err := check("vkEnumerateDeviceExtensionProperties", call(i.fn.EnumerateDeviceExtensionProperties, pd, 0, uintptr(unsafe.Pointer(&n)), 0)); err != nil {
		return nil, err
	}
	props := make([]extensionProperties, n+1)
	if err := check("vkEnumerateDeviceExtensionProperties", call(i.fn.EnumerateDeviceExtensionProperties, pd, 0, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&props[0])))); err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, p := range props[:n] {
		m[gostr(p.ExtensionName[:])] = true
	}
	return m, nil
}

// describe reads what vkgrad needs to know of physical device pd.
func (i *Instance) describe(pd uintptr) (DeviceInfo, error) {
	var d DeviceInfo
	exts, err := i.deviceExtensions(pd)
	if err != nil {
		return d, err
	}
	d.extensions = exts
	var base physicalDeviceProperties
	callPtr(i.fn.GetPhysicalDeviceProperties, pd, uintptr(unsafe.Pointer(&base)))
	d.APIVersion = base.ApiVersion
	q := i.chainQueries(base.ApiVersion, exts)
	i.runQueries(pd, base, q, &d)
	describeProperties(&d, q)
	describeLimits(&d, &q.props.Properties.Limits)
	if d.Unusable == "" {
		i.describeCoopMat(pd, q.coopMat, &d)
	}
	i.describeMemory(pd, base.ApiVersion, exts, &d)
	i.describeComputeQueue(pd, &d)
	if d.ComputeQueueFamily < 0 && d.Unusable == "" {
		d.Unusable = "no compute queue"
	}
	return d, nil
}

// deviceQueries are the property and feature structures of one device, each chained into
// props or feats where the device has its extension or Vulkan version.
type deviceQueries struct {
	props     *physicalDeviceProperties2
	ids       *physicalDeviceIDProperties
	subgroup  *physicalDeviceSubgroupProperties
	maint3    *physicalDeviceMaintenance3Properties
	maint4    *physicalDeviceMaintenance4Properties
	driver    *physicalDeviceDriverProperties
	amdCores  *physicalDeviceShaderCorePropertiesAMD
	nvSMs     *physicalDeviceShaderSMBuiltinsPropertiesNV
	sizeProps *physicalDeviceSubgroupSizeControlProperties
	feats     *physicalDeviceFeatures2
	fp16      *physicalDeviceShaderFloat16Int8Features
	sizeFeats *physicalDeviceSubgroupSizeControlFeatures
	coopMat   *coopMatQueries
}

// chainQueries builds the pNext chains for a device of Vulkan version api with extensions exts.
func (i *Instance) chainQueries(api uint32, exts map[string]bool) *deviceQueries {
	hasV12 := api >= apiVersion(1, 2, 0) && i.version >= apiVersion(1, 2, 0)
	q := i.chainProperties(api, exts, hasV12)
	q.fp16 = &physicalDeviceShaderFloat16Int8Features{SType: stPhysicalDeviceShaderFloat16Int8}
	q.feats = &physicalDeviceFeatures2{SType: stPhysicalDeviceFeatures2}
	if hasV12 || exts["VK_KHR_shader_float16_int8"] {
		q.feats.PNext = unsafe.Pointer(q.fp16)
	}
	q.sizeProps = &physicalDeviceSubgroupSizeControlProperties{SType: stPhysicalDeviceSubgroupSizeControlProperties}
	q.sizeFeats = &physicalDeviceSubgroupSizeControlFeatures{SType: stPhysicalDeviceSubgroupSizeControlFeatures}
	if subgroupSizeControlCore(api, i.version) || exts["VK_EXT_subgroup_size_control"] {
		q.sizeProps.PNext, q.props.PNext = q.props.PNext, unsafe.Pointer(q.sizeProps)
		q.sizeFeats.PNext, q.feats.PNext = q.feats.PNext, unsafe.Pointer(q.sizeFeats)
	}
	q.coopMat = chainCoopMat(q, exts, hasV12)
	return q
}

// chainProperties builds the chain of properties that all devices answer and of those
// their extensions add.
func (i *Instance) chainProperties(api uint32, exts map[string]bool, hasV12 bool) *deviceQueries {
	q := &deviceQueries{}
	q.maint3 = &physicalDeviceMaintenance3Properties{SType: stPhysicalDeviceMaintenance3}
	q.maint4 = &physicalDeviceMaintenance4Properties{SType: stPhysicalDeviceMaintenance4}
	if api >= apiVersion(1, 3, 0) && i.version >= apiVersion(1, 3, 0) || exts["VK_KHR_maintenance4"] {
		q.maint3.PNext = unsafe.Pointer(q.maint4)
	}
	q.subgroup = &physicalDeviceSubgroupProperties{SType: stPhysicalDeviceSubgroupProperties, PNext: unsafe.Pointer(q.maint3)}
	q.ids = &physicalDeviceIDProperties{SType: stPhysicalDeviceIDProperties, PNext: unsafe.Pointer(q.subgroup)}
	q.driver = &physicalDeviceDriverProperties{SType: stPhysicalDeviceDriverProperties}
	q.props = &physicalDeviceProperties2{SType: stPhysicalDeviceProperties2, PNext: unsafe.Pointer(q.ids)}
	if hasV12 || exts["VK_KHR_driver_properties"] {
		q.driver.PNext = unsafe.Pointer(q.ids)
		q.props.PNext = unsafe.Pointer(q.driver)
	}
	q.amdCores = &physicalDeviceShaderCorePropertiesAMD{SType: stPhysicalDeviceShaderCorePropertiesAMD}
	q.nvSMs = &physicalDeviceShaderSMBuiltinsPropertiesNV{SType: stPhysicalDeviceShaderSMBuiltinsPropertiesNV}
	if exts["VK_AMD_shader_core_properties"] {
		q.amdCores.PNext, q.props.PNext = q.props.PNext, unsafe.Pointer(q.amdCores)
	}
	if exts["VK_NV_shader_sm_builtins"] {
		q.nvSMs.PNext, q.props.PNext = q.props.PNext, unsafe.Pointer(q.nvSMs)
	}
	return q
}

// runQueries fills q on a Vulkan 1.1 device; an older one keeps only its base properties and
// is marked unusable.
func (i *Instance) runQueries(pd uintptr, base physicalDeviceProperties, q *deviceQueries, d *DeviceInfo) {
	if base.ApiVersion >= apiVersion(1, 1, 0) {
		callPtr(i.fn.GetPhysicalDeviceProperties2, pd, uintptr(unsafe.Pointer(q.props)))
		callPtr(i.fn.GetPhysicalDeviceFeatures2, pd, uintptr(unsafe.Pointer(q.feats)))
		return
	}
	q.props.Properties = base
	d.Unusable = "Vulkan " + versionString(base.ApiVersion) + " (vkgrad needs 1.1)"
}

// describeProperties copies the device's identity, subgroup and compute-unit properties.
func describeProperties(d *DeviceInfo, q *deviceQueries) {
	p := &q.props.Properties
	d.Name = gostr(p.DeviceName[:])
	d.Type = DeviceType(p.DeviceType)
	d.VendorID, d.DeviceID = p.VendorID, p.DeviceID
	d.Vendor = VendorName(p.VendorID)
	d.DriverVersion = p.DriverVersion
	d.DriverName = gostr(q.driver.DriverName[:])
	d.DriverInfo = gostr(q.driver.DriverInfo[:])
	d.UUID = q.ids.DeviceUUID
	d.pipelineCacheUUID = p.PipelineCacheUUID
	d.SubgroupSize = q.subgroup.SubgroupSize
	d.SubgroupArithmetic = subgroupArithmetic(q.subgroup)
	d.SubgroupShuffle = q.subgroup.SupportedStages&shaderStageCompute != 0 && q.subgroup.SupportedOperations&subgroupFeatureShuffle != 0
	if q.sizeFeats.SubgroupSizeControl != 0 && q.sizeProps.RequiredSubgroupSizeStages&shaderStageCompute != 0 {
		d.MinSubgroupSize, d.MaxSubgroupSize = q.sizeProps.MinSubgroupSize, q.sizeProps.MaxSubgroupSize
		d.MaxComputeWorkgroupSubgroups = q.sizeProps.MaxComputeWorkgroupSubgroups
	}
	amd := q.amdCores
	d.ComputeUnits = max(q.nvSMs.ShaderSMCount, amd.ShaderEngineCount*amd.ShaderArraysPerEngineCount*amd.ComputeUnitsPerShaderArray)
	d.MaxMemoryAllocationSize, d.MaxBufferSize = q.maint3.MaxMemoryAllocationSize, q.maint4.MaxBufferSize
	d.Float16 = q.fp16.ShaderFloat16 != 0
}

// describeLimits copies the limits vkgrad sizes its work by.
func describeLimits(d *DeviceInfo, l *physicalDeviceLimits) {
	d.MaxStorageBufferRange = l.MaxStorageBufferRange
	d.MaxComputeWorkGroupSize = l.MaxComputeWorkGroupSize
	d.MaxComputeWorkGroupCount = l.MaxComputeWorkGroupCount
	d.MaxComputeWorkGroupInvocations = l.MaxComputeWorkGroupInvocations
	d.MaxComputeSharedMemorySize = l.MaxComputeSharedMemorySize
	d.MaxPushConstantsSize = l.MaxPushConstantsSize
	d.MinStorageBufferOffsetAlignment = l.MinStorageBufferOffsetAlignment
	d.TimestampPeriod = l.TimestampPeriod
}

// describeMemory lists the device's heaps and, where the driver reports it, their budgets.
func (i *Instance) describeMemory(pd uintptr, api uint32, exts map[string]bool, d *DeviceInfo) {
	mem, budget := i.memoryProperties(pd, api, exts["VK_EXT_memory_budget"])
	for k, h := range mem.MemoryHeaps[:min(mem.MemoryHeapCount, 16)] {
		d.Heaps = append(d.Heaps, MemoryHeap{Size: h.Size, DeviceLocal: h.Flags&memoryHeapDeviceLocal != 0})
		if budget != nil {
			d.HeapBudget = append(d.HeapBudget, budget.HeapBudget[k])
		}
	}
}

// describeComputeQueue picks the queue family vkgrad submits to (-1 where none computes):
// the first with compute and timestamps, else the first with compute, which is usually the
// universal queue that the driver optimises most.
func (i *Instance) describeComputeQueue(pd uintptr, d *DeviceInfo) {
	d.ComputeQueueFamily = -1
	var nq uint32
	callPtr(i.fn.GetPhysicalDeviceQueueFamilyProperties, pd, uintptr(unsafe.Pointer(&nq)), 0)
	if nq == 0 {
		return
	}
	qs := make([]queueFamilyProperties, nq)
	callPtr(i.fn.GetPhysicalDeviceQueueFamilyProperties, pd, uintptr(unsafe.Pointer(&nq)), uintptr(unsafe.Pointer(&qs[0])))
	for k, q := range qs[:nq] {
		if q.QueueFlags&queueCompute == 0 || q.QueueCount == 0 {
			continue
		}
		if d.ComputeQueueFamily < 0 || (d.TimestampBits == 0 && q.TimestampValidBits > 0) {
			d.ComputeQueueFamily = k
			d.TimestampBits = q.TimestampValidBits
		}
	}
}

// memoryProperties reads the heaps and, with VK_EXT_memory_budget, the budget of each.
func (i *Instance) memoryProperties(pd uintptr, api uint32, hasBudget bool) (physicalDeviceMemoryProperties, *physicalDeviceMemoryBudgetPropertiesEXT) {
	if !hasBudget || api < apiVersion(1, 1, 0) || i.fn.GetPhysicalDeviceMemoryProperties2 == 0 {
		var mem physicalDeviceMemoryProperties
		callPtr(i.fn.GetPhysicalDeviceMemoryProperties, pd, uintptr(unsafe.Pointer(&mem)))
		return mem, nil
	}
	budget := &physicalDeviceMemoryBudgetPropertiesEXT{SType: stPhysicalDeviceMemoryBudget}
	mem2 := &physicalDeviceMemoryProperties2{SType: stPhysicalDeviceMemoryProperties2, PNext: unsafe.Pointer(budget)}
	callPtr(i.fn.GetPhysicalDeviceMemoryProperties2, pd, uintptr(unsafe.Pointer(mem2)))
	return mem2.MemoryProperties, budget
}

// Select picks a device for a --device value: "auto" takes the first discrete GPU, else the
// first integrated, else the first virtual GPU, and never a CPU implementation such as
// lavapipe; "vulkan" does the same but falls back to a CPU implementation when that is all
// there is; "vulkan:N" takes device N. It returns the index into devs and a one-line reason.
func Select(devs []DeviceInfo, spec string) (int, string, error) {
	switch {
	case spec == "auto" || spec == "vulkan":
		for _, want := range []DeviceType{DeviceDiscrete, DeviceIntegrated, DeviceVirtual} {
			for k, d := range devs {
				if d.Type == want && d.Unusable == "" {
					return k, fmt.Sprintf("%s: vulkan:%d (%s), the first usable %s GPU", spec, k, d.Name, want), nil
				}
			}
		}
		var skipped []string
		for k, d := range devs {
			if d.Unusable != "" {
				skipped = append(skipped, fmt.Sprintf("vulkan:%d %s: %s", k, d.Name, d.Unusable))
				continue
			}
			if spec == "vulkan" {
				return k, fmt.Sprintf("vulkan: vulkan:%d (%s), a %s device, the only kind present", k, d.Name, d.Type), nil
			}
			skipped = append(skipped, fmt.Sprintf("vulkan:%d %s is a %s device (ask for it as vulkan:%d)", k, d.Name, d.Type, k))
		}
		if len(skipped) == 0 {
			return -1, "", fmt.Errorf("%w: the loader lists no devices", ErrNoDevice)
		}
		return -1, "", fmt.Errorf("%w: %s takes GPUs only; %s", ErrNoDevice, spec, strings.Join(skipped, "; "))
	case strings.HasPrefix(spec, "vulkan:"):
		n, err := strconv.Atoi(spec[len("vulkan:"):])
		if err != nil || n < 0 {
			return -1, "", fmt.Errorf("vk: device %q: expected vulkan:N with N a device index", spec)
		}
		if n >= len(devs) {
			return -1, "", fmt.Errorf("%w: only %d Vulkan device(s) present", ErrNoDevice, len(devs))
		}
		if devs[n].Unusable != "" {
			return -1, "", fmt.Errorf("vk: %s (%s) is unusable: %s", spec, devs[n].Name, devs[n].Unusable)
		}
		return n, fmt.Sprintf("%s: %s (%s), as asked", spec, devs[n].Name, devs[n].Type), nil
	}
	return -1, "", fmt.Errorf("vk: %q is not a Vulkan device (want auto, vulkan or vulkan:N)", spec)
}

// IsUnavailable reports whether err means Vulkan cannot be used here at all (no loader, no
// device), the case in which callers fall back to the CPU.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrNoLoader) || errors.Is(err, ErrNoDevice)
}

// Describe formats a device for `vkgrad devices`: a header line and indented detail lines.
func Describe(d DeviceInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vulkan:%d  %s  [%s]\n", d.Index, d.Name, d.Type)
	fmt.Fprintf(&b, "  vendor    %s (0x%04x), device 0x%04x\n", d.Vendor, d.VendorID, d.DeviceID)
	drv := d.DriverName
	if d.DriverInfo != "" {
		drv += " " + d.DriverInfo
	}
	if drv == "" {
		drv = "(driver name not reported)"
	}
	fmt.Fprintf(&b, "  driver    %s, version %s\n", drv, d.DriverVersionString())
	fmt.Fprintf(&b, "  api       Vulkan %s\n", d.APIVersionString())
	for k, h := range d.Heaps {
		kind := "host"
		if h.DeviceLocal {
			kind = "device-local"
		}
		budget := ""
		if k < len(d.HeapBudget) {
			budget = ", budget " + sysinfo.FormatBytes(d.HeapBudget[k])
		}
		fmt.Fprintf(&b, "  heap %d    %s %s%s\n", k, sysinfo.FormatBytes(h.Size), kind, budget)
	}
	fmt.Fprintf(&b, "  memory    one allocation at most %s, one buffer at most %s\n", bytesOrUnknown(d.MaxMemoryAllocationSize), bytesOrUnknown(d.MaxBufferSize))
	fp16 := "no"
	if d.Float16 {
		fp16 = "yes"
	}
	arith := ""
	if d.SubgroupArithmetic {
		arith = " with arithmetic"
	}
	fmt.Fprintf(&b, "  compute   subgroup %d%s, fp16 %s, workgroup %dx%dx%d (%d invocations), shared %s\n",
		d.SubgroupSize, arith, fp16, d.MaxComputeWorkGroupSize[0], d.MaxComputeWorkGroupSize[1], d.MaxComputeWorkGroupSize[2],
		d.MaxComputeWorkGroupInvocations, sysinfo.FormatBytes(uint64(d.MaxComputeSharedMemorySize)))
	fmt.Fprintf(&b, "  coopmat   %s\n", describeCoopMat(d.CoopMatShapes))
	if len(d.CoopMatNVShapes) > 0 {
		fmt.Fprintf(&b, "  coopmatNV %s\n", describeCoopMat(d.CoopMatNVShapes))
	}
	if c, err := coopMatKernelFor(d); err == nil {
		fmt.Fprintf(&b, "  matmul    %s available: %v, tile %v, workgroup %d (VKGRAD_MATMUL_KERNEL=%s)\n", mmCoopMatKernel, c.shape, c.tile(), c.local(), mmCoopMatKernel)
	}
	if c, err := coopMatKHRKernelFor(d); err == nil {
		fmt.Fprintf(&b, "  matmul    %s available: %v, tile %v, workgroup %d (VKGRAD_MATMUL_KERNEL=%s)\n", mmCoopMatKHRKernel, c.shape, c.tile(), c.local(), mmCoopMatKHRKernel)
	}
	fmt.Fprintf(&b, "  attention %s\n", describeFlashRB(d))
	if d.ComputeUnits > 0 {
		fmt.Fprintf(&b, "  cores     %d compute units\n", d.ComputeUnits)
	}
	fmt.Fprintf(&b, "  limits    storage buffer range %s, offset alignment %d, timestamp period %g ns",
		sysinfo.FormatBytes(uint64(d.MaxStorageBufferRange)), d.MinStorageBufferOffsetAlignment, d.TimestampPeriod)
	if d.Unusable != "" {
		fmt.Fprintf(&b, "\n  unusable  %s", d.Unusable)
	}
	return b.String()
}

func bytesOrUnknown(n uint64) string {
	if n == 0 {
		return "(not reported)"
	}
	return sysinfo.FormatBytes(n)
}
