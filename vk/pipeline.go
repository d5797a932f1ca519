package vk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/vkgrad/vkgrad/shaders"
)

// Kernel names a compute shader and its interface: how many storage-buffer bindings it has,
// how many 32-bit push-constant words, and the workgroup size it is specialised for.
type Kernel struct {
	Shader   string    // name in package shaders, e.g. "add"
	Bindings int       // storage buffers at set 0, bindings 0..Bindings-1
	Push     int       // 32-bit words of push constants
	Local    [3]uint32 // workgroup size (specialisation constants 0, 1, 2); zeros mean 1

	// Spec are specialisation constants 3, 4, ... (a zero keeps the shader's default).
	Spec [maxSpec]uint32

	// SubgroupSize is the subgroup size the pipeline requires of the driver (see
	// pinnedSubgroupSize); 0 leaves it to the driver.
	SubgroupSize uint32

	// Op names the kernel in profiles when Shader is one of its variants (empty: Shader), so
	// that a kernel's time reads the same whichever variant the device runs.
	Op string
}

// profileName is the name k's time is recorded under.
func (k Kernel) profileName() string {
	if k.Op != "" {
		return k.Op
	}
	return k.Shader
}

// maxSpec bounds the specialisation constants a kernel sets beyond its workgroup size; a fixed
// array keeps Kernel comparable, so it can key the pipeline cache.
const maxSpec = 4

type pipelineKey struct {
	shader   string
	local    [3]uint32
	spec     [maxSpec]uint32
	subgroup uint32
}

type pipeline struct {
	kernel   Kernel
	dsLayout uint64
	layout   uint64
	pipe     uint64
}

func (p *pipeline) destroy(d *Device) {
	if p.pipe != 0 {
		callPtr(d.fn.DestroyPipeline, d.handle, uintptr(p.pipe), 0)
	}
	if p.layout != 0 {
		callPtr(d.fn.DestroyPipelineLayout, d.handle, uintptr(p.layout), 0)
	}
	if p.dsLayout != 0 {
		callPtr(d.fn.DestroyDescriptorSetLayout, d.handle, uintptr(p.dsLayout), 0)
	}
}

// pipelineFor returns the pipeline of k, building it on first use.
func (d *Device) pipelineFor(k Kernel) (*pipeline, error) {
	for i := range k.Local {
		if k.Local[i] == 0 {
			k.Local[i] = 1
		}
	}
	key := pipelineKey{k.Shader, k.Local, k.Spec, k.SubgroupSize}
	if p, ok := d.pipelines[key]; ok {
		if p.kernel.Bindings != k.Bindings || p.kernel.Push != k.Push {
			return nil, fmt.Errorf("vk: kernel %s used with %d bindings/%d push words and %d/%d", k.Shader,
				p.kernel.Bindings, p.kernel.Push, k.Bindings, k.Push)
		}
		return p, nil
	}
	inv := uint64(k.Local[0]) * uint64(k.Local[1]) * uint64(k.Local[2])
	lim := d.Info.MaxComputeWorkGroupSize
	if k.Local[0] > lim[0] || k.Local[1] > lim[1] || k.Local[2] > lim[2] || inv > uint64(d.Info.MaxComputeWorkGroupInvocations) {
		return nil, fmt.Errorf("vk: kernel %s: workgroup %v exceeds %s's limits (%v, %d invocations)", k.Shader, k.Local, d.Info.Name, lim, d.Info.MaxComputeWorkGroupInvocations)
	}
	if uint32(k.Push*4) > d.Info.MaxPushConstantsSize {
		return nil, fmt.Errorf("vk: kernel %s: %d bytes of push constants exceed %s's %d", k.Shader, k.Push*4, d.Info.Name, d.Info.MaxPushConstantsSize)
	}
	if s := k.SubgroupSize; s != 0 && (s < d.Info.MinSubgroupSize || s > d.Info.MaxSubgroupSize || inv > uint64(s)*uint64(d.Info.MaxComputeWorkgroupSubgroups)) {
		return nil, fmt.Errorf("vk: kernel %s: %s cannot run workgroup %v in subgroups of %d", k.Shader, d.Info.Name, k.Local, s)
	}
	code, err := shaders.Lookup(k.Shader)
	if err != nil {
		return nil, err
	}
	p := &pipeline{kernel: k}
	fail := func(err error) (*pipeline, error) {
		p.destroy(d)
		return nil, fmt.Errorf("vk: building kernel %s: %w", k.Shader, err)
	}

	binds := make([]descriptorSetLayoutBinding, max(k.Bindings, 1))
	for i := range k.Bindings {
		binds[i] = descriptorSetLayoutBinding{Binding: uint32(i), DescriptorType: descriptorTypeStorageBuffer, DescriptorCount: 1, StageFlags: shaderStageCompute}
	}
	dsci := &descriptorSetLayoutCreateInfo{SType: stDescriptorSetLayoutCreateInfo, BindingCount: uint32(k.Bindings), PBindings: unsafe.Pointer(&binds[0])}
	if err := check("vkCreateDescriptorSetLayout", call(d.fn.CreateDescriptorSetLayout, d.handle, uintptr(unsafe.Pointer(dsci)), 0, uintptr(unsafe.Pointer(&p.dsLayout)))); err != nil {
		return fail(err)
	}
	pcr := &pushConstantRange{StageFlags: shaderStageCompute, Size: uint32(k.Push * 4)}
	plci := &pipelineLayoutCreateInfo{SType: stPipelineLayoutCreateInfo, SetLayoutCount: 1, PSetLayouts: unsafe.Pointer(&p.dsLayout)}
	if k.Push > 0 {
		plci.PushConstantRangeCount = 1
		plci.PPushConstantRanges = unsafe.Pointer(pcr)
	}
	if err := check("vkCreatePipelineLayout", call(d.fn.CreatePipelineLayout, d.handle, uintptr(unsafe.Pointer(plci)), 0, uintptr(unsafe.Pointer(&p.layout)))); err != nil {
		return fail(err)
	}

	// SPIR-V is a stream of 32-bit words; copy it so the pointer is 4-byte aligned.
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	smci := &shaderModuleCreateInfo{SType: stShaderModuleCreateInfo, CodeSize: uintptr(len(words) * 4), PCode: unsafe.Pointer(&words[0])}
	var module uint64
	if err := check("vkCreateShaderModule", call(d.fn.CreateShaderModule, d.handle, uintptr(unsafe.Pointer(smci)), 0, uintptr(unsafe.Pointer(&module)))); err != nil {
		return fail(err)
	}
	defer callPtr(d.fn.DestroyShaderModule, d.handle, uintptr(module), 0)

	spec, entries, n := specialisation(k)
	si := &specializationInfo{MapEntryCount: uint32(n), PMapEntries: unsafe.Pointer(&entries[0]), DataSize: uintptr(4 * n), PData: unsafe.Pointer(&spec[0])}
	entry := cstr("main")
	cpci := &computePipelineCreateInfo{
		SType: stComputePipelineCreateInfo,
		Stage: pipelineShaderStageCreateInfo{
			SType:               stPipelineShaderStageCreateInfo,
			Stage:               shaderStageCompute,
			Module:              module,
			PName:               unsafe.Pointer(&entry[0]),
			PSpecializationInfo: unsafe.Pointer(si),
		},
		Layout:            p.layout,
		BasePipelineIndex: -1,
	}
	if k.SubgroupSize != 0 {
		cpci.Stage.PNext = unsafe.Pointer(&pipelineShaderStageRequiredSubgroupSizeCreateInfo{
			SType: stPipelineShaderStageRequiredSubgroupSizeCreateInfo, RequiredSubgroupSize: k.SubgroupSize,
		})
	}
	if err := check("vkCreateComputePipelines", call(d.fn.CreateComputePipelines, d.handle, uintptr(d.pcache), 1, uintptr(unsafe.Pointer(cpci)), 0, uintptr(unsafe.Pointer(&p.pipe)))); err != nil {
		return fail(err)
	}
	d.pipelines[key] = p
	return p, nil
}

// specialisation lists the constants of k: the workgroup size as ids 0..2, then each non-zero
// Spec[i] as id 3+i (a zero leaves the shader's default).
func specialisation(k Kernel) (*[3 + maxSpec]uint32, *[3 + maxSpec]specializationMapEntry, int) {
	var vals [3 + maxSpec]uint32
	var entries [3 + maxSpec]specializationMapEntry
	n := 0
	add := func(id, v uint32) {
		vals[n] = v
		entries[n] = specializationMapEntry{id, uint32(4 * n), 4}
		n++
	}
	for i, v := range k.Local {
		add(uint32(i), v)
	}
	for i, v := range k.Spec {
		if v != 0 {
			add(uint32(3+i), v)
		}
	}
	return &vals, &entries, n
}

// pipelineCacheFile is where the pipeline cache of this device and driver lives:
// $VKGRAD_CACHE_DIR, else the user cache directory, under vkgrad/.
func pipelineCacheFile(info DeviceInfo) (string, error) {
	dir := os.Getenv("VKGRAD_CACHE_DIR")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(base, "vkgrad")
	}
	return filepath.Join(dir, fmt.Sprintf("pipelines-%s-%08x.bin", hex.EncodeToString(info.UUID[:]), info.DriverVersion)), nil
}

// openPipelineCache creates the pipeline cache, seeded from disk when a file written by the
// same device and driver exists. Any failure only costs compile time, so none is fatal.
func (d *Device) openPipelineCache() {
	var data []byte
	if path, err := pipelineCacheFile(d.Info); err == nil {
		d.pcachePath = path
		if b, err := os.ReadFile(path); err == nil && d.pipelineCacheHeaderOK(b) {
			data = b
		}
	}
	ci := &pipelineCacheCreateInfo{SType: stPipelineCacheCreateInfo}
	if len(data) > 0 {
		ci.InitialDataSize = uintptr(len(data))
		ci.PInitialData = unsafe.Pointer(&data[0])
	}
	if call(d.fn.CreatePipelineCache, d.handle, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&d.pcache))) == success {
		d.pcacheLoaded = len(data) > 0
	} else {
		d.pcache = 0
		if len(data) > 0 { // a cache the driver rejects: start empty
			ci.InitialDataSize, ci.PInitialData = 0, nil
			if call(d.fn.CreatePipelineCache, d.handle, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&d.pcache))) != success {
				d.pcache = 0
			}
		}
	}
}

// pipelineCacheHeaderOK checks VkPipelineCacheHeaderVersionOne against this device, so a
// file from another driver is never handed to the driver.
func (d *Device) pipelineCacheHeaderOK(b []byte) bool {
	if len(b) < 32 {
		return false
	}
	le := binary.LittleEndian
	return le.Uint32(b[0:]) >= 32 && le.Uint32(b[4:]) == 1 &&
		le.Uint32(b[8:]) == d.Info.VendorID && le.Uint32(b[12:]) == d.Info.DeviceID &&
		bytes.Equal(b[16:32], d.Info.pipelineCacheUUID[:])
}

// savePipelineCache writes the cache next to a temporary name and renames it into place.
func (d *Device) savePipelineCache() {
	if d.pcache == 0 {
		return
	}
	defer func() {
		callPtr(d.fn.DestroyPipelineCache, d.handle, uintptr(d.pcache), 0)
		d.pcache = 0
	}()
	if d.pcachePath == "" {
		return
	}
	var n uintptr
	if call(d.fn.GetPipelineCacheData, d.handle, uintptr(d.pcache), uintptr(unsafe.Pointer(&n)), 0) != success || n == 0 {
		return
	}
	data := make([]byte, n)
	if call(d.fn.GetPipelineCacheData, d.handle, uintptr(d.pcache), uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&data[0]))) != success {
		return
	}
	data = data[:n]
	if err := os.MkdirAll(filepath.Dir(d.pcachePath), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.pcachePath), ".pipelines-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), d.pcachePath) != nil {
		os.Remove(tmp.Name())
	}
}
