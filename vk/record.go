package vk

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/tensor"
)

const (
	maxQueries   = 4096 // two per dispatch
	fenceTimeout = 10 * time.Minute

	// MaxBindings is the most storage buffers a Kernel may bind (descriptor pools hold
	// descriptorSetsPerPool sets of this many).
	MaxBindings = 8
	// MaxPushWords is the most 32-bit push-constant words a Kernel may take: 128 bytes, the
	// least maxPushConstantsSize a Vulkan device may have.
	MaxPushWords = 32
	// maxCallArgs is the most arguments purego passes to a C function.
	maxCallArgs = 15
)

// fenceTimeoutNS is a variable so that the 64-bit value compiles on 32-bit targets too.
var fenceTimeoutNS = uint64(fenceTimeout)

// access is a byte range of a block that a recorded command reads or writes.
type access struct {
	block  *memBlock
	lo, hi uint64
	write  bool
}

// recorder records commands into one command buffer and submits it at a flush.
type recorder struct {
	cmdPool   uint64
	cmd       uintptr
	fence     uint64
	recording bool

	pending   []access // accesses since the last barrier
	hostRead  bool     // a download copy is recorded: make it visible to the host
	barriers  int      // statistics
	dispatchN int
	submits   int

	descPools  []uint64
	descIdx    int                      // the pool sets are allocated from
	descSets   int                      // sets allocated since the pools were last reset
	descCache  map[descriptorKey]uint64 // see descriptors.go
	descWrites int                      // statistics: sets allocated and written

	queryPool uint64
	queries   uint32
	names     []string     // kernel of each query pair
	costs     [][2]float64 // flops and bytes of each query pair's dispatch
	nextCost  [2]float64   // set by Cost for the next dispatch
	profiling bool
	profile   map[string]*ProfileEntry

	deferred []*memBlock // dedicated blocks to destroy after the next fence

	// Scratch of the recording path, so that recording a command allocates nothing: the
	// structures handed to Vulkan live here, in the Device, rather than in heap objects made
	// for each call (see rcall).
	argv      [maxCallArgs]uintptr
	infos     [MaxBindings]descriptorBufferInfo
	writes    [MaxBindings]writeDescriptorSet
	push      [MaxPushWords]uint32
	set       uint64 // the descriptor set being written and bound
	layout    uint64 // the set layout being allocated from
	allocInfo descriptorSetAllocateInfo
	beginInfo commandBufferBeginInfo
	barrier   memoryBarrier
	region    bufferCopy
	submit    submitInfo
	stamps    []uint64 // timestamp query results
}

func (r *recorder) init(d *Device) error {
	cpci := &commandPoolCreateInfo{SType: stCommandPoolCreateInfo, Flags: commandPoolCreateResetCommandBuffer, QueueFamilyIndex: uint32(d.Info.ComputeQueueFamily)}
	if err := check("vkCreateCommandPool", call(d.fn.CreateCommandPool, d.handle, uintptr(unsafe.Pointer(cpci)), 0, uintptr(unsafe.Pointer(&r.cmdPool)))); err != nil {
		return err
	}
	cbai := &commandBufferAllocateInfo{SType: stCommandBufferAllocateInfo, CommandPool: r.cmdPool, Level: commandBufferLevelPrimary, CommandBufferCount: 1}
	if err := check("vkAllocateCommandBuffers", call(d.fn.AllocateCommandBuffers, d.handle, uintptr(unsafe.Pointer(cbai)), uintptr(unsafe.Pointer(&r.cmd)))); err != nil {
		return err
	}
	fci := &fenceCreateInfo{SType: stFenceCreateInfo}
	if err := check("vkCreateFence", call(d.fn.CreateFence, d.handle, uintptr(unsafe.Pointer(fci)), 0, uintptr(unsafe.Pointer(&r.fence)))); err != nil {
		return err
	}
	r.profile = map[string]*ProfileEntry{}
	r.descCache = map[descriptorKey]uint64{}
	return nil
}

func (r *recorder) destroy(d *Device) {
	for _, p := range r.descPools {
		callPtr(d.fn.DestroyDescriptorPool, d.handle, uintptr(p), 0)
	}
	r.descPools = nil
	r.descCache = nil
	if r.queryPool != 0 {
		callPtr(d.fn.DestroyQueryPool, d.handle, uintptr(r.queryPool), 0)
	}
	if r.fence != 0 {
		callPtr(d.fn.DestroyFence, d.handle, uintptr(r.fence), 0)
	}
	if r.cmdPool != 0 {
		callPtr(d.fn.DestroyCommandPool, d.handle, uintptr(r.cmdPool), 0)
	}
	for _, b := range r.deferred {
		d.pool.destroyBlock(b)
	}
	r.deferred = nil
}

// rcall calls a Vulkan function on the recording path without allocating. call and callPtr are
// marked uintptrescapes, which keeps the objects their pointer arguments point to alive but makes
// every call site allocate its argument slice; rcall instead copies the arguments into the
// recorder's buffer, so every pointer among them must point into the Device (the recorder's
// scratch, r.cmd, r.fence), which stays reachable through the call. The caller holds d.mu.
func (d *Device) rcall(fn uintptr, args ...uintptr) uintptr {
	r := &d.rec
	n := copy(r.argv[:], args)
	return callArgs(fn, r.argv[:n])
}

// rcallResult is rcall for a function that returns VkResult.
func (d *Device) rcallResult(fn uintptr, args ...uintptr) result {
	return result(int32(d.rcall(fn, args...)))
}

// begin starts the command buffer if it is not recording yet.
func (d *Device) begin() error {
	r := &d.rec
	if d.err != nil {
		return d.err
	}
	if r.recording {
		return nil
	}
	r.beginInfo = commandBufferBeginInfo{SType: stCommandBufferBeginInfo, Flags: commandBufferUsageOneTimeSubmit}
	if err := check("vkBeginCommandBuffer", d.rcallResult(d.fn.BeginCommandBuffer, r.cmd, uintptr(unsafe.Pointer(&r.beginInfo)))); err != nil {
		return d.fail(err)
	}
	r.recording = true
	if r.profiling {
		d.rcall(d.fn.CmdResetQueryPool, r.cmd, uintptr(r.queryPool), 0, maxQueries)
	}
	return nil
}

// hazard inserts a barrier when a new command touches bytes an earlier, unbarriered command
// wrote, or writes bytes one read: read-after-write, write-after-write and write-after-read.
func (d *Device) hazard(accs []access) {
	r := &d.rec
	need := len(r.pending) > 256 // a long list costs more to scan than a barrier
	for _, a := range accs {
		if need {
			break
		}
		for _, p := range r.pending {
			if p.block == a.block && p.lo < a.hi && a.lo < p.hi && (p.write || a.write) {
				need = true
				break
			}
		}
	}
	if need {
		r.barrier = memoryBarrier{
			SType:         stMemoryBarrier,
			SrcAccessMask: accessShaderWrite | accessTransferWrite,
			DstAccessMask: accessShaderRead | accessShaderWrite | accessTransferRead | accessTransferWrite,
		}
		stages := uintptr(pipelineStageComputeShader | pipelineStageTransfer)
		d.rcall(d.fn.CmdPipelineBarrier, r.cmd, stages, stages, 0, 1, uintptr(unsafe.Pointer(&r.barrier)), 0, 0, 0, 0)
		r.pending = r.pending[:0]
		r.barriers++
	}
	r.pending = append(r.pending, accs...)
}

// Window is a binding of part of a buffer: the descriptor covers an aligned byte range and
// First is the element index, within it, of the first element asked for. Shaders receive
// First through push constants.
type Window struct {
	block    *memBlock
	off, rng uint64 // the descriptor's aligned offset and range in the block's VkBuffer
	lo, hi   uint64 // the bytes the shader may touch
	First    uint32
}

// Window binds count 4-byte elements of b starting at element elem. It fails when the range
// runs past the buffer or exceeds the device's maxStorageBufferRange (callers split such
// work into chunks; see MaxWindowElems).
func (d *Device) Window(b *Buffer, elem, count int) (Window, error) {
	if b == nil || b.freed {
		return Window{}, errors.New("vk: window on a nil or freed buffer")
	}
	if elem < 0 || count < 0 || uint64(elem+count)*4 > b.size {
		return Window{}, fmt.Errorf("vk: window [%d, %d) outside %s of %d elements", elem, elem+count, b.label, b.size/4)
	}
	start := b.off + uint64(elem)*4
	end := start + uint64(count)*4
	off := alignDown(start, d.Info.MinStorageBufferOffsetAlignment)
	rng := max(end-off, 4)
	if rng > uint64(d.Info.MaxStorageBufferRange) {
		return Window{}, fmt.Errorf("vk: window of %s on %s exceeds maxStorageBufferRange %s", sysinfo.FormatBytes(rng), b.label, sysinfo.FormatBytes(uint64(d.Info.MaxStorageBufferRange)))
	}
	return Window{block: b.block, off: off, rng: rng, lo: start, hi: end, First: uint32((start - off) / 4)}, nil
}

// MaxWindowElems is the most elements one Window may hold on this device, with room for the
// alignment slack at its start, in whole vec4s: NVIDIA's range is 2^32-1 bytes, and a window
// of an odd number of floats would keep the vec4 kernels from every chunked operand.
func (d *Device) MaxWindowElems() int {
	return int((uint64(d.Info.MaxStorageBufferRange)-d.Info.MinStorageBufferOffsetAlignment)/16) * 4
}

// Arg is a Window passed to a kernel binding, marked when the kernel writes it.
type Arg struct {
	W     Window
	Write bool
	// Unused marks a stand-in window for a binding the shader may write but this dispatch's
	// push constants leave untouched (a matmul without its GELU output).
	Unused bool
}

// Dispatch records k over groups workgroups with the given push constants and bindings
// (args[i] at binding i). Barriers are inserted as the accesses require. A kernel takes at
// most MaxBindings bindings and MaxPushWords push words. Dispatch keeps neither push nor args,
// and once k's pipeline is built it allocates nothing.
func (d *Device) Dispatch(k Kernel, groups [3]uint32, push []uint32, args ...Arg) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dispatchLocked(k, groups, push, args)
}

func (d *Device) dispatchLocked(k Kernel, groups [3]uint32, push []uint32, args []Arg) error {
	if len(args) != k.Bindings || len(push) != k.Push {
		return fmt.Errorf("vk: kernel %s takes %d bindings and %d push words, got %d and %d", k.Shader, k.Bindings, k.Push, len(args), len(push))
	}
	if k.Bindings > MaxBindings || k.Push > MaxPushWords {
		return fmt.Errorf("vk: kernel %s takes %d bindings and %d push words, more than %d and %d", k.Shader, k.Bindings, k.Push, MaxBindings, MaxPushWords)
	}
	for i, g := range groups {
		if g == 0 {
			return nil
		}
		if g > d.Info.MaxComputeWorkGroupCount[i] {
			return fmt.Errorf("vk: kernel %s: %d workgroups in dimension %d exceed the device's %d", k.Shader, g, i, d.Info.MaxComputeWorkGroupCount[i])
		}
	}
	p, err := d.pipelineFor(k)
	if err != nil {
		return err
	}
	r := &d.rec
	if r.profiling && r.queries+2 > maxQueries {
		if err := d.flushLocked(); err != nil {
			return err
		}
	}
	if err := d.begin(); err != nil {
		return err
	}
	if err := d.bindingSet(p.dsLayout, args); err != nil {
		return err
	}
	if k.Bindings > 0 {
		var accs [MaxBindings]access
		for i, a := range args {
			if p.writes&(1<<i) != 0 && !a.Write && !a.Unused {
				return fmt.Errorf("vk: kernel %s writes binding %d, which the dispatch marks read-only (no barrier would order the write)", k.Shader, i)
			}
			// The whole descriptor range counts, alignment slack included: that is what the
			// shader may address, and what synchronization validation checks.
			accs[i] = access{block: a.W.block, lo: a.W.off, hi: a.W.off + a.W.rng, write: a.Write}
		}
		d.hazard(accs[:k.Bindings])
	}
	d.rcall(d.fn.CmdBindPipeline, r.cmd, pipelineBindPointCompute, uintptr(p.pipe))
	d.rcall(d.fn.CmdBindDescriptorSets, r.cmd, pipelineBindPointCompute, uintptr(p.layout), 0, 1, uintptr(unsafe.Pointer(&r.set)), 0, 0)
	if k.Push > 0 {
		copy(r.push[:], push)
		d.rcall(d.fn.CmdPushConstants, r.cmd, uintptr(p.layout), shaderStageCompute, 0, uintptr(k.Push*4), uintptr(unsafe.Pointer(&r.push[0])))
	}
	if r.profiling {
		d.rcall(d.fn.CmdWriteTimestamp, r.cmd, pipelineStageTopOfPipe, uintptr(r.queryPool), uintptr(r.queries))
	}
	d.rcall(d.fn.CmdDispatch, r.cmd, uintptr(groups[0]), uintptr(groups[1]), uintptr(groups[2]))
	if r.profiling {
		d.rcall(d.fn.CmdWriteTimestamp, r.cmd, pipelineStageBottomOfPipe, uintptr(r.queryPool), uintptr(r.queries+1))
		r.queries += 2
		r.names = append(r.names, k.profileName())
		r.costs = append(r.costs, r.nextCost)
	}
	r.nextCost = [2]float64{}
	r.dispatchN++
	return nil
}

// copyRegion records a buffer-to-buffer copy of size bytes.
func (d *Device) copyRegion(src *memBlock, srcOff uint64, dst *memBlock, dstOff, size uint64) error {
	if err := d.begin(); err != nil {
		return err
	}
	d.hazard([]access{{block: src, lo: srcOff, hi: srcOff + size}, {block: dst, lo: dstOff, hi: dstOff + size, write: true}})
	d.rec.region = bufferCopy{SrcOffset: srcOff, DstOffset: dstOff, Size: size}
	d.rcall(d.fn.CmdCopyBuffer, d.rec.cmd, uintptr(src.buf), uintptr(dst.buf), 1, uintptr(unsafe.Pointer(&d.rec.region)))
	return nil
}

// fillRegion records a fill of size bytes (a multiple of 4) with a repeated 32-bit word.
func (d *Device) fillRegion(b *memBlock, off, size uint64, word uint32) error {
	if size == 0 {
		return nil
	}
	if err := d.begin(); err != nil {
		return err
	}
	d.hazard([]access{{block: b, lo: off, hi: off + size, write: true}})
	d.rcall(d.fn.CmdFillBuffer, d.rec.cmd, uintptr(b.buf), uintptr(off), uintptr(size), uintptr(word))
	return nil
}

// flushLocked submits the recorded commands, waits for them, and recycles per-submission
// resources: the staging ring, deferred frees and timestamp queries (and descriptor pools when
// their cache is full).
func (d *Device) flushLocked() error {
	if d.err != nil {
		return d.err
	}
	r := &d.rec
	if !r.recording {
		return nil
	}
	if r.hostRead {
		r.barrier = memoryBarrier{SType: stMemoryBarrier, SrcAccessMask: accessTransferWrite | accessShaderWrite, DstAccessMask: accessHostRead}
		d.rcall(d.fn.CmdPipelineBarrier, r.cmd, pipelineStageTransfer|pipelineStageComputeShader, pipelineStageHost, 0, 1, uintptr(unsafe.Pointer(&r.barrier)), 0, 0, 0, 0)
		r.hostRead = false
	}
	r.recording = false
	r.pending = r.pending[:0]
	if err := check("vkEndCommandBuffer", d.rcallResult(d.fn.EndCommandBuffer, r.cmd)); err != nil {
		return d.fail(err)
	}
	r.submit = submitInfo{SType: stSubmitInfo, CommandBufferCount: 1, PCommandBuffers: unsafe.Pointer(&r.cmd)}
	if err := check("vkQueueSubmit", d.rcallResult(d.fn.QueueSubmit, d.queue, 1, uintptr(unsafe.Pointer(&r.submit)), uintptr(r.fence))); err != nil {
		return d.fail(err)
	}
	r.submits++
	res := d.rcallResult(d.fn.WaitForFences, d.handle, 1, uintptr(unsafe.Pointer(&r.fence)), 1, uintptr(fenceTimeoutNS))
	if res == timeout {
		// Work still running after minutes means a hung device; treat it as lost.
		return d.fail(fmt.Errorf("%w: work did not finish within %v", ErrDeviceLost, fenceTimeout))
	}
	if err := check("vkWaitForFences", res); err != nil {
		return d.fail(err)
	}
	d.rcall(d.fn.ResetFences, d.handle, 1, uintptr(unsafe.Pointer(&r.fence)))
	d.rcall(d.fn.ResetCommandBuffer, r.cmd, 0)
	d.trimDescriptorSets()
	d.stageHead = 0
	for _, b := range r.deferred {
		d.pool.destroyBlock(b)
	}
	r.deferred = r.deferred[:0]
	if r.queries > 0 {
		d.readTimestamps()
	}
	return nil
}

// Cost records the arithmetic (flops) and memory traffic (bytes) of the work the next Dispatch
// starts, for the profile's achieved GFLOP/s and GB/s; an op split over several dispatches of
// one kernel may give its whole cost to the first.
func (d *Device) Cost(flops, bytes float64) {
	d.mu.Lock()
	d.rec.nextCost = [2]float64{flops, bytes}
	d.mu.Unlock()
}

// ProfileEntry is the GPU time spent in one kernel.
type ProfileEntry = tensor.KernelTime

// SetProfiling turns per-dispatch timestamp queries on or off (from the next command buffer).
func (d *Device) SetProfiling(on bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := &d.rec
	if on == r.profiling {
		return nil
	}
	if on && d.Info.TimestampBits == 0 {
		return fmt.Errorf("vk: %s has no timestamps on its compute queue", d.Info.Name)
	}
	if err := d.flushLocked(); err != nil {
		return err
	}
	if on && r.queryPool == 0 {
		ci := &queryPoolCreateInfo{SType: stQueryPoolCreateInfo, QueryType: queryTypeTimestamp, QueryCount: maxQueries}
		if err := check("vkCreateQueryPool", call(d.fn.CreateQueryPool, d.handle, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&r.queryPool)))); err != nil {
			return err
		}
	}
	r.profiling = on
	return nil
}

func (d *Device) readTimestamps() {
	r := &d.rec
	n := r.queries
	r.queries = 0
	names, costs := r.names, r.costs
	r.names, r.costs = r.names[:0], r.costs[:0]
	if uint32(cap(r.stamps)) < n {
		r.stamps = make([]uint64, maxQueries)
	}
	ts := r.stamps[:n]
	res := d.rcallResult(d.fn.GetQueryPoolResults, d.handle, uintptr(r.queryPool), 0, uintptr(n), uintptr(n*8), uintptr(unsafe.Pointer(&ts[0])), 8, queryResult64|queryResultWait)
	if res != success {
		return
	}
	mask := ^uint64(0)
	if d.Info.TimestampBits < 64 {
		mask = 1<<d.Info.TimestampBits - 1
	}
	for i, name := range names {
		ticks := (ts[2*i+1] - ts[2*i]) & mask
		e := r.profile[name]
		if e == nil {
			e = &ProfileEntry{Kernel: name}
			r.profile[name] = e
		}
		e.Count++
		e.Total += time.Duration(float64(ticks) * float64(d.Info.TimestampPeriod))
		if i < len(costs) {
			e.Flops += costs[i][0]
			e.Bytes += costs[i][1]
		}
	}
}

// Profile returns the GPU time per kernel since profiling began or was reset, in no order
// (tensor.ProfileTable sorts it).
// Dispatches without a barrier between them may overlap, so times can add up to more than
// the wall-clock time.
func (d *Device) Profile() []ProfileEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]ProfileEntry, 0, len(d.rec.profile))
	for _, e := range d.rec.profile {
		out = append(out, *e)
	}
	return out
}

// ResetProfile clears the collected kernel times.
func (d *Device) ResetProfile() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rec.profile = map[string]*ProfileEntry{}
}

// RecordStats counts what the recorder has done since the device opened.
type RecordStats struct {
	Dispatches int
	Barriers   int
	Submits    int // queue submissions
	// DescriptorWrites counts descriptor sets allocated and written; a dispatch that binds
	// what an earlier one bound reuses its set (see descriptors.go).
	DescriptorWrites int
}

// RecordStats reports the number of dispatches, barriers, submissions and descriptor-set
// writes so far.
func (d *Device) RecordStats() RecordStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := &d.rec
	return RecordStats{Dispatches: r.dispatchN, Barriers: r.barriers, Submits: r.submits, DescriptorWrites: r.descWrites}
}
