package vk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
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
const maxSpec = 8

type pipelineKey struct {
	shader   string
	local    [3]uint32
	spec     [maxSpec]uint32
	subgroup uint32
}

type pipeline struct {
	kernel   Kernel
	writes   uint32 // the bindings the shader may write (writableBindings)
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
	k.Local = localOrOne(k.Local)
	key := pipelineKey{k.Shader, k.Local, k.Spec, k.SubgroupSize}
	if p, ok := d.pipelines[key]; ok {
		if err := sameInterface(p.kernel, k); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := d.checkKernelLimits(k); err != nil {
		return nil, err
	}
	code, err := shaders.Lookup(k.Shader)
	if err != nil {
		return nil, err
	}
	writes, err := writableBindings(code)
	if err != nil {
		return nil, fmt.Errorf("vk: kernel %s: %w", k.Shader, err)
	}
	p, err := d.buildPipeline(k, code)
	if err != nil {
		return nil, err
	}
	p.writes = writes
	d.pipelines[key] = p
	return p, nil
}

// localOrOne reads a zero workgroup dimension as 1.
func localOrOne(local [3]uint32) [3]uint32 {
	for i := range local {
		if local[i] == 0 {
			local[i] = 1
		}
	}
	return local
}

// sameInterface says how k differs from built, the kernel a cached pipeline was made for, in
// the bindings and push words that the pipeline's layout fixes.
func sameInterface(built, k Kernel) error {
	if built.Bindings != k.Bindings || built.Push != k.Push {
		return fmt.Errorf("vk: kernel %s used with %d bindings/%d push words and %d/%d", k.Shader,
			built.Bindings, built.Push, k.Bindings, k.Push)
	}
	return nil
}

// checkKernelLimits says why the device cannot run k: its workgroup, push constants or
// required subgroup size.
func (d *Device) checkKernelLimits(k Kernel) error {
	inv := uint64(k.Local[0]) * uint64(k.Local[1]) * uint64(k.Local[2])
	lim := d.Info.MaxComputeWorkGroupSize
	if k.Local[0] > lim[0] || k.Local[1] > lim[1] || k.Local[2] > lim[2] || inv > uint64(d.Info.MaxComputeWorkGroupInvocations) {
		return fmt.Errorf("vk: kernel %s: workgroup %v exceeds %s's limits (%v, %d invocations)", k.Shader, k.Local, d.Info.Name, lim, d.Info.MaxComputeWorkGroupInvocations)
	}
	if uint32(k.Push*4) > d.Info.MaxPushConstantsSize {
		return fmt.Errorf("vk: kernel %s: %d bytes of push constants exceed %s's %d", k.Shader, k.Push*4, d.Info.Name, d.Info.MaxPushConstantsSize)
	}
	if s := k.SubgroupSize; s != 0 && (s < d.Info.MinSubgroupSize || s > d.Info.MaxSubgroupSize || inv > uint64(s)*uint64(d.Info.MaxComputeWorkgroupSubgroups)) {
		return fmt.Errorf("vk: kernel %s: %s cannot run workgroup %v in subgroups of %d", k.Shader, d.Info.Name, k.Local, s)
	}
	return nil
}

// buildPipeline creates k's layouts and its compute pipeline from SPIR-V code, destroying
// what it made when a step fails.
func (d *Device) buildPipeline(k Kernel, code []byte) (*pipeline, error) {
	p := &pipeline{kernel: k}
	err := d.createSetLayout(p)
	if err == nil {
		err = d.createPipelineLayout(p)
	}
	if err == nil {
		err = d.createComputePipeline(p, code)
	}
	if err != nil {
		p.destroy(d)
		return nil, fmt.Errorf("vk: building kernel %s: %w", k.Shader, err)
	}
	return p, nil
}

// createSetLayout makes the layout of p's storage buffers, bindings 0..Bindings-1.
func (d *Device) createSetLayout(p *pipeline) error {
	k := p.kernel
	binds := make([]descriptorSetLayoutBinding, max(k.Bindings, 1))
	for i := range k.Bindings {
		binds[i] = descriptorSetLayoutBinding{Binding: uint32(i), DescriptorType: descriptorTypeStorageBuffer, DescriptorCount: 1, StageFlags: shaderStageCompute}
	}
	dsci := &descriptorSetLayoutCreateInfo{SType: stDescriptorSetLayoutCreateInfo, BindingCount: uint32(k.Bindings), PBindings: unsafe.Pointer(&binds[0])}
	return check("vkCreateDescriptorSetLayout", call(d.fn.CreateDescriptorSetLayout, d.handle, uintptr(unsafe.Pointer(dsci)), 0, uintptr(unsafe.Pointer(&p.dsLayout))))
}

// createPipelineLayout makes p's layout: its set layout and its push-constant range.
func (d *Device) createPipelineLayout(p *pipeline) error {
	pcr := &pushConstantRange{StageFlags: shaderStageCompute, Size: uint32(p.kernel.Push * 4)}
	plci := &pipelineLayoutCreateInfo{SType: stPipelineLayoutCreateInfo, SetLayoutCount: 1, PSetLayouts: unsafe.Pointer(&p.dsLayout)}
	if p.kernel.Push > 0 {
		plci.PushConstantRangeCount = 1
		plci.PPushConstantRanges = unsafe.Pointer(pcr)
	}
	return check("vkCreatePipelineLayout", call(d.fn.CreatePipelineLayout, d.handle, uintptr(unsafe.Pointer(plci)), 0, uintptr(unsafe.Pointer(&p.layout))))
}

// createComputePipeline compiles code, specialised for p's kernel, into p's pipeline.
func (d *Device) createComputePipeline(p *pipeline, code []byte) error {
	module, err := d.createShaderModule(code)
	if err != nil {
		return err
	}
	defer callPtr(d.fn.DestroyShaderModule, d.handle, uintptr(module), 0)

	k := p.kernel
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
	return check("vkCreateComputePipelines", call(d.fn.CreateComputePipelines, d.handle, uintptr(d.pcache), 1, uintptr(unsafe.Pointer(cpci)), 0, uintptr(unsafe.Pointer(&p.pipe))))
}

// createShaderModule makes a module of SPIR-V code.
func (d *Device) createShaderModule(code []byte) (uint64, error) {
	// SPIR-V is a stream of 32-bit words; copy it so the pointer is 4-byte aligned.
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	smci := &shaderModuleCreateInfo{SType: stShaderModuleCreateInfo, CodeSize: uintptr(len(words) * 4), PCode: unsafe.Pointer(&words[0])}
	var module uint64
	err := check("vkCreateShaderModule", call(d.fn.CreateShaderModule, d.handle, uintptr(unsafe.Pointer(smci)), 0, uintptr(unsafe.Pointer(&module))))
	return module, err
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

// PipelineCacheDir is the folder of the pipeline caches, one file per device and driver named
// pipelines-*.bin: $VKGRAD_CACHE_DIR, else vkgrad/ in the user cache directory.
func PipelineCacheDir() (string, error) {
	if dir := os.Getenv("VKGRAD_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "vkgrad"), nil
}

// pipelineCacheFile is where the pipeline cache of this device and driver lives.
func pipelineCacheFile(info DeviceInfo) (string, error) {
	dir, err := PipelineCacheDir()
	if err != nil {
		return "", err
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
	if err := os.MkdirAll(filepath.Dir(d.pcachePath), 0o755); err != nil {
		return
	}
	_ = atomicfile.WriteFile(d.pcachePath, data[:n], 0o644) // a cache: a failed write costs a rebuild
}
