package vk

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
)

// memBlock is one VkDeviceMemory allocation with a VkBuffer spanning all of it; tensors are
// sub-ranges of these buffers.
type memBlock struct {
	mem       uint64 // VkDeviceMemory
	buf       uint64 // VkBuffer over the whole block
	size      uint64
	free      []span // free ranges, sorted by offset and coalesced
	dedicated bool   // holds a single large buffer; released when it is freed
	host      bool
	mapped    unsafe.Pointer // host blocks only
	counted   bool           // included in memPool.reserved
}

type span struct{ off, size uint64 }

// Buffer is a sub-allocated range of device memory.
type Buffer struct {
	block *memBlock
	off   uint64 // bytes into the block
	size  uint64 // bytes asked for
	alloc uint64 // bytes reserved
	label string
	freed bool
}

// Size is the buffer's size in bytes.
func (b *Buffer) Size() uint64 { return b.size }

// memPool sub-allocates buffers from large blocks with a best-fit free list; requests larger
// than half a block get a dedicated block of their own.
type memPool struct {
	d            *Device
	props        physicalDeviceMemoryProperties
	blockSize    uint64
	align        uint64
	blocks       []*memBlock
	inUse        uint64 // bytes reserved by live buffers
	reserved     uint64 // bytes of device memory held in blocks
	limit        uint64 // the largest allocation and buffer the device allows (AllocationLimit)
	defaultBlock uint64 // the block size before any limit
	largest      uint64 // the largest allocation made so far
}

func (p *memPool) init(d *Device, props *physicalDeviceMemoryProperties) {
	p.d = d
	p.props = *props
	p.limit = d.Info.AllocationLimit()
	p.blockSize = 256 << 20
	if local := d.Info.DeviceLocalBytes(); local > 0 && local/8 < p.blockSize {
		p.blockSize = max(local/8, 16<<20)
	}
	p.defaultBlock = p.blockSize
	p.blockSize = min(p.blockSize, p.limit)
	// 256 bytes satisfies every device's minStorageBufferOffsetAlignment in practice and keeps
	// each tensor on its own cache lines.
	p.align = max(256, d.Info.MinStorageBufferOffsetAlignment)
}

func alignUp(x, a uint64) uint64   { return (x + a - 1) / a * a }
func alignDown(x, a uint64) uint64 { return x / a * a }

// memoryType picks the first type allowed by bits that has all of want, preferring one that
// also has all of prefer; -1 when none.
func (p *memPool) memoryType(bits, want, prefer uint32) int {
	best := -1
	for i := uint32(0); i < p.props.MemoryTypeCount && i < 32; i++ {
		if bits&(1<<i) == 0 {
			continue
		}
		f := p.props.MemoryTypes[i].PropertyFlags
		if f&want != want {
			continue
		}
		if f&prefer == prefer {
			return int(i)
		}
		if best < 0 {
			best = int(i)
		}
	}
	return best
}

// newBlock allocates a block of size bytes; label names what it is for in errors.
func (p *memPool) newBlock(size uint64, host bool, label string) (*memBlock, error) {
	d := p.d
	b := &memBlock{size: size, host: host}
	bci := &bufferCreateInfo{
		SType:       stBufferCreateInfo,
		Size:        size,
		Usage:       bufferUsageStorageBuffer | bufferUsageTransferSrc | bufferUsageTransferDst,
		SharingMode: sharingModeExclusive,
	}
	if r := call(d.fn.CreateBuffer, d.handle, uintptr(unsafe.Pointer(bci)), 0, uintptr(unsafe.Pointer(&b.buf))); r != success {
		return nil, p.oomError(check("vkCreateBuffer", r), size, label)
	}
	var req memoryRequirements
	callPtr(d.fn.GetBufferMemoryRequirements, d.handle, uintptr(b.buf), uintptr(unsafe.Pointer(&req)))
	var mt int
	if host {
		mt = p.memoryType(req.MemoryTypeBits, memoryPropertyHostVisible|memoryPropertyHostCoherent, memoryPropertyHostCached)
	} else {
		mt = p.memoryType(req.MemoryTypeBits, memoryPropertyDeviceLocal, 0)
		if mt < 0 {
			mt = p.memoryType(req.MemoryTypeBits, 0, 0)
		}
	}
	if mt < 0 {
		callPtr(d.fn.DestroyBuffer, d.handle, uintptr(b.buf), 0)
		return nil, fmt.Errorf("vk: %s has no suitable memory type for %s", d.Info.Name, label)
	}
	mai := &memoryAllocateInfo{SType: stMemoryAllocateInfo, AllocationSize: req.Size, MemoryTypeIndex: uint32(mt)}
	if r := call(d.fn.AllocateMemory, d.handle, uintptr(unsafe.Pointer(mai)), 0, uintptr(unsafe.Pointer(&b.mem))); r != success {
		callPtr(d.fn.DestroyBuffer, d.handle, uintptr(b.buf), 0)
		return nil, p.oomError(check("vkAllocateMemory", r), size, label)
	}
	if err := check("vkBindBufferMemory", call(d.fn.BindBufferMemory, d.handle, uintptr(b.buf), uintptr(b.mem), 0)); err != nil {
		p.destroyBlock(b)
		return nil, err
	}
	if host {
		if err := check("vkMapMemory", call(d.fn.MapMemory, d.handle, uintptr(b.mem), 0, ^uintptr(0), 0, uintptr(unsafe.Pointer(&b.mapped)))); err != nil {
			p.destroyBlock(b)
			return nil, p.oomError(err, size, label)
		}
	}
	b.free = []span{{0, size}}
	p.reserved += size
	p.largest = max(p.largest, size)
	b.counted = true
	return b, nil
}

func (p *memPool) oomError(err error, size uint64, label string) error {
	if errors.Is(err, ErrOutOfMemory) {
		return fmt.Errorf("vk: out of memory on %s allocating %s for %s (%s held by vkgrad, device-local budget %s): %w",
			p.d.Info.Name, sysinfo.FormatBytes(size), label, sysinfo.FormatBytes(p.reserved), sysinfo.FormatBytes(p.d.Info.DeviceLocalBudget()), err)
	}
	return fmt.Errorf("vk: allocating %s for %s: %w", sysinfo.FormatBytes(size), label, err)
}

func (p *memPool) destroyBlock(b *memBlock) {
	d := p.d
	if b.mapped != nil {
		callPtr(d.fn.UnmapMemory, d.handle, uintptr(b.mem))
		b.mapped = nil
	}
	callPtr(d.fn.DestroyBuffer, d.handle, uintptr(b.buf), 0)
	callPtr(d.fn.FreeMemory, d.handle, uintptr(b.mem), 0)
	if b.counted {
		p.reserved -= b.size
		b.counted = false
	}
	b.buf, b.mem = 0, 0
}

// setLimit lowers (or restores) the largest allocation, and the block size with it; the
// largest allocation seen is counted afresh from here.
func (p *memPool) setLimit(limit uint64) {
	p.limit = limit
	p.blockSize = min(p.defaultBlock, limit)
	p.largest = 0
}

// alloc reserves size bytes of device-local memory.
func (p *memPool) alloc(size uint64, label string) (*Buffer, error) {
	n := alignUp(max(size, 4), p.align)
	if n > p.limit {
		return nil, &allocTooLarge{label: label, size: size, device: p.d.Info.Name, limit: p.limit}
	}
	if n > p.blockSize/2 {
		b, err := p.newBlock(n, false, label)
		if err != nil {
			return nil, err
		}
		b.dedicated = true
		b.free = nil
		p.blocks = append(p.blocks, b)
		p.inUse += n
		return &Buffer{block: b, size: size, alloc: n, label: label}, nil
	}
	var best *memBlock
	bestIdx := -1
	for _, b := range p.blocks {
		if b.dedicated || b.host {
			continue
		}
		for i, s := range b.free {
			if s.size >= n && (best == nil || s.size < best.free[bestIdx].size) {
				best, bestIdx = b, i
			}
		}
	}
	if best == nil {
		b, err := p.newBlock(p.blockSize, false, label)
		if err != nil {
			return nil, err
		}
		p.blocks = append(p.blocks, b)
		best, bestIdx = b, 0
	}
	s := best.free[bestIdx]
	if s.size == n {
		best.free = append(best.free[:bestIdx], best.free[bestIdx+1:]...)
	} else {
		best.free[bestIdx] = span{s.off + n, s.size - n}
	}
	p.inUse += n
	return &Buffer{block: best, off: s.off, size: size, alloc: n, label: label}, nil
}

// allocHost makes a mapped host-visible buffer in a block of its own.
func (p *memPool) allocHost(size uint64, label string) (*Buffer, error) {
	b, err := p.newBlock(size, true, label)
	if err != nil {
		return nil, err
	}
	b.dedicated = true
	b.free = nil
	p.blocks = append(p.blocks, b)
	return &Buffer{block: b, size: size, alloc: size, label: label}, nil
}

// release returns a buffer's range to its block. Dedicated blocks are destroyed by the caller
// once no queued command uses them.
func (p *memPool) release(buf *Buffer) {
	p.inUse -= buf.alloc
	b := buf.block
	if b.dedicated {
		for i, x := range p.blocks {
			if x == b {
				p.blocks = append(p.blocks[:i], p.blocks[i+1:]...)
				break
			}
		}
		return
	}
	i := sort.Search(len(b.free), func(i int) bool { return b.free[i].off > buf.off })
	b.free = append(b.free, span{})
	copy(b.free[i+1:], b.free[i:])
	b.free[i] = span{buf.off, buf.alloc}
	// Coalesce with the following and then the preceding span.
	if i+1 < len(b.free) && b.free[i].off+b.free[i].size == b.free[i+1].off {
		b.free[i].size += b.free[i+1].size
		b.free = append(b.free[:i+1], b.free[i+2:]...)
	}
	if i > 0 && b.free[i-1].off+b.free[i-1].size == b.free[i].off {
		b.free[i-1].size += b.free[i].size
		b.free = append(b.free[:i], b.free[i+1:]...)
	}
}

func (p *memPool) destroy() {
	for _, b := range p.blocks {
		p.destroyBlock(b)
	}
	p.blocks = nil
}

// MemoryStats reports the pool's state.
type MemoryStats struct {
	InUse    uint64 // bytes reserved by live buffers (after alignment)
	Reserved uint64 // bytes of device and staging memory held
	Blocks   int
	Largest  uint64 // the largest single allocation made
	Limit    uint64 // the largest allocation allowed
}

// MemoryStats reports how much memory the device's pool holds.
func (d *Device) MemoryStats() MemoryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return MemoryStats{InUse: d.pool.inUse, Reserved: d.pool.reserved, Blocks: len(d.pool.blocks), Largest: d.pool.largest, Limit: d.pool.limit}
}

// LimitAllocations lowers the largest allocation vkgrad makes on the device below what the
// driver allows, to see how a model lays out on a device with smaller limits (tests do).
func (d *Device) LimitAllocations(bytes uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pool.setLimit(min(bytes, d.Info.AllocationLimit()))
}

// allocTooLarge is a request beyond the device's largest allocation.
type allocTooLarge struct {
	label       string
	size, limit uint64
	device      string
}

func (e *allocTooLarge) Error() string {
	return fmt.Sprintf("vk: %s of %s exceeds the largest allocation %s allows, %s (maxMemoryAllocationSize, maxBufferSize)",
		e.label, sysinfo.FormatBytes(e.size), e.device, sysinfo.FormatBytes(e.limit))
}

// Is matches ErrAllocationTooLarge, and ErrOutOfMemory: either way the request cannot be
// served, and a smaller batch is the remedy.
func (e *allocTooLarge) Is(target error) bool {
	return target == ErrAllocationTooLarge || target == ErrOutOfMemory
}
