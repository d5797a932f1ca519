package vk

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Device is an opened logical device with one compute queue, a memory pool, a pipeline cache
// and a command recorder. Its methods may be called from several goroutines; they serialise.
type Device struct {
	Info DeviceInfo

	inst     *Instance
	ownsInst bool
	pd       uintptr
	handle   uintptr
	fn       deviceFuncs
	queue    uintptr

	mu  sync.Mutex
	err error // sticky: set by device loss, returned by every later operation

	pool      memPool
	staging   *Buffer // host-visible ring for uploads and downloads
	stageHead uint64  // bytes of the ring used by the commands recorded so far

	pipelines    map[pipelineKey]*pipeline
	pcache       uint64
	pcachePath   string
	pcacheLoaded bool // the cache was seeded from pcachePath

	rec recorder

	// coopMat is the cooperative-matrix matmul kernel the device was opened for, and coopMatKHR
	// its VK_KHR_cooperative_matrix kernel (coopMat itself on a device without the NV one)
	// where it runs one; where coopMat is nil, coopMatErr says why (the device cannot run one,
	// or the driver refused its features).
	coopMat, coopMatKHR *mmCoopMat
	coopMatErr          error
}

// OpenDevice opens device index of the instance.
func (i *Instance) OpenDevice(index int) (*Device, error) {
	devs, err := i.Devices()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(devs) {
		return nil, fmt.Errorf("%w: device index %d out of range (%d devices)", ErrNoDevice, index, len(devs))
	}
	info := devs[index]
	if info.Unusable != "" {
		return nil, fmt.Errorf("vk: device %d (%s) is unusable: %s", index, info.Name, info.Unusable)
	}
	pds, err := i.physicalDevices()
	if err != nil {
		return nil, err
	}
	d := &Device{Info: info, inst: i, pd: pds[index], pipelines: map[pipelineKey]*pipeline{}}

	prio := float32(1)
	qci := &deviceQueueCreateInfo{
		SType:            stDeviceQueueCreateInfo,
		QueueFamilyIndex: uint32(info.ComputeQueueFamily),
		QueueCount:       1,
		PQueuePriorities: unsafe.Pointer(&prio),
	}
	var exts []string
	if info.extensions["VK_KHR_portability_subset"] {
		// Required by the spec whenever a portability driver (MoltenVK) advertises it.
		exts = append(exts, "VK_KHR_portability_subset")
	}
	var pNext unsafe.Pointer
	if info.MaxSubgroupSize > 0 { // the reduction kernels fix their subgroup size
		pNext = unsafe.Pointer(&physicalDeviceSubgroupSizeControlFeatures{SType: stPhysicalDeviceSubgroupSizeControlFeatures, SubgroupSizeControl: 1})
		if !subgroupSizeControlCore(info.APIVersion, i.version) {
			exts = append(exts, "VK_EXT_subgroup_size_control")
		}
	}
	// The cooperative-matrix features are extras: where the driver refuses them, the device
	// opens without, and products stay on the float32 kernels.
	var khr *mmCoopMat
	_, khr, d.coopMatErr = coopMatKernels(info)
	if coopNext, coopExts, cm, ok := coopMatCreation(info, pNext, exts, i.version); ok {
		if err := i.createDevice(d, qci, coopNext, coopExts); err == nil {
			d.coopMat, d.coopMatKHR = cm, khr
		} else if cm != nil {
			d.coopMatErr = fmt.Errorf("the driver refused the cooperative-matrix features: %w", err)
		}
	}
	if d.handle == 0 {
		if err := i.createDevice(d, qci, pNext, exts); err != nil {
			return nil, fmt.Errorf("vk: opening %s: %w", info.Name, err)
		}
	}
	getDeviceProcAddr := i.fn.GetDeviceProcAddr
	missing := loadFuncs(&d.fn, func(name string) uintptr {
		c := cstr(name)
		return callPtr(getDeviceProcAddr, d.handle, uintptr(unsafe.Pointer(&c[0])))
	})
	if len(missing) > 0 {
		d.destroyDevice()
		return nil, fmt.Errorf("vk: %s lacks %v", info.Name, missing)
	}
	callPtr(d.fn.GetDeviceQueue, d.handle, uintptr(info.ComputeQueueFamily), 0, uintptr(unsafe.Pointer(&d.queue)))

	var mem physicalDeviceMemoryProperties
	callPtr(i.fn.GetPhysicalDeviceMemoryProperties, d.pd, uintptr(unsafe.Pointer(&mem)))
	d.pool.init(d, &mem)
	if err := d.rec.init(d); err != nil {
		d.Close()
		return nil, err
	}
	d.staging, err = d.pool.allocHost(stagingSize(info), "staging ring")
	if err != nil {
		d.Close()
		return nil, err
	}
	d.openPipelineCache()
	return d, nil
}

// createDevice creates d's logical device with one queue, features pNext and extensions exts.
func (i *Instance) createDevice(d *Device, qci *deviceQueueCreateInfo, pNext unsafe.Pointer, exts []string) error {
	extPtrs, extKeep := cstrArray(exts)
	dci := &deviceCreateInfo{
		SType:                   stDeviceCreateInfo,
		PNext:                   pNext,
		QueueCreateInfoCount:    1,
		PQueueCreateInfos:       unsafe.Pointer(qci),
		EnabledExtensionCount:   uint32(len(exts)),
		PpEnabledExtensionNames: extPtrs,
	}
	err := check("vkCreateDevice", call(i.fn.CreateDevice, d.pd, uintptr(unsafe.Pointer(dci)), 0, uintptr(unsafe.Pointer(&d.handle))))
	runtime.KeepAlive(extKeep)
	if err != nil {
		d.handle = 0
	}
	return err
}

// stagingSize is the size of the upload/download ring: large enough that typical transfers
// need one submission, small next to device memory.
func stagingSize(info DeviceInfo) uint64 {
	if info.DeviceLocalBytes() < 1<<30 {
		return 16 << 20
	}
	return 64 << 20
}

// OpenDevice creates an instance (with validation when VKGRAD_VALIDATION=1), selects a device by
// spec (see Select) and opens it. reason says why that device was chosen.
func OpenDevice(spec string) (d *Device, reason string, err error) {
	inst, err := NewInstance(InstanceOptions{Validation: ValidationFromEnv()})
	if err != nil {
		return nil, "", err
	}
	devs, err := inst.Devices()
	if err != nil {
		inst.Close()
		return nil, "", err
	}
	idx, reason, err := Select(devs, spec)
	if err != nil {
		inst.Close()
		return nil, "", err
	}
	d, err = inst.OpenDevice(idx)
	if err != nil {
		inst.Close()
		return nil, "", err
	}
	d.ownsInst = true
	return d, reason, nil
}

// Instance returns the instance the device was opened from (for its validation messages).
func (d *Device) Instance() *Instance { return d.inst }

// Err returns the device's sticky error (device lost), or nil.
func (d *Device) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// fail records the first fatal error; device loss makes every later operation fail.
func (d *Device) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrDeviceLost) && d.err == nil {
		d.err = fmt.Errorf("vk: %s: %w", d.Info.Name, err)
	}
	return err
}

// Close waits for queued work, saves the pipeline cache and releases everything. A device
// opened by Open also closes its instance.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handle == 0 {
		return nil
	}
	var err error
	if d.err == nil {
		err = d.flushLocked()
	}
	callPtr(d.fn.DeviceWaitIdle, d.handle)
	d.savePipelineCache()
	for _, p := range d.pipelines {
		p.destroy(d)
	}
	d.pipelines = nil
	d.rec.destroy(d)
	d.pool.destroy()
	d.destroyDevice()
	if d.ownsInst {
		d.inst.Close()
	}
	return err
}

func (d *Device) destroyDevice() {
	if d.handle != 0 {
		callPtr(d.fn.DestroyDevice, d.handle, 0)
		d.handle = 0
	}
}

// Sync submits everything recorded and waits for it.
func (d *Device) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.flushLocked()
}
