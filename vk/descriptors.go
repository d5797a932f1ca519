package vk

import "unsafe"

// Descriptor sets are cached by what they hold. A dispatch whose kernel binds the same buffer
// ranges as an earlier dispatch of a kernel with the same set layout binds the set written
// then, so a training step, which repeats its dispatches over the same buffers, allocates and
// writes descriptor sets in its first step only. A set is written once and never updated, so
// no set changes while a recorded command buffer uses it; the pools are reset, and the cache
// emptied, only after a submission completes, once descriptorCacheSets sets have been made.

const (
	descriptorSetsPerPool = 512
	// descriptorCacheSets bounds the sets kept between submissions: far more than the distinct
	// dispatches of a training step, few enough that sets of freed buffers do not pile up.
	descriptorCacheSets = 8192
)

// descriptorBinding is what one binding of a cached set holds. block is kept in the key so
// that the key of a destroyed block can match no later block: the memBlock stays reachable,
// so its address is not reused, and its buf is zeroed when it is destroyed.
type descriptorBinding struct {
	block    *memBlock
	buf      uint64
	off, rng uint64
}

// descriptorKey identifies a set: its layout and each binding's buffer range.
type descriptorKey struct {
	layout uint64
	n      int
	binds  [MaxBindings]descriptorBinding
}

// bindingSet puts into d.rec.set a set of layout holding args at bindings 0.., reusing the
// cached one when there is one. It allocates nothing on a cache hit.
func (d *Device) bindingSet(layout uint64, args []Arg) error {
	r := &d.rec
	key := descriptorKey{layout: layout, n: len(args)}
	for i, a := range args {
		key.binds[i] = descriptorBinding{block: a.W.block, buf: a.W.block.buf, off: a.W.off, rng: a.W.rng}
	}
	if set, ok := r.descCache[key]; ok {
		r.set = set
		return nil
	}
	if err := d.allocDescriptorSet(layout); err != nil {
		return err
	}
	if len(args) > 0 {
		for i, a := range args {
			r.infos[i] = descriptorBufferInfo{Buffer: a.W.block.buf, Offset: a.W.off, Range: a.W.rng}
			r.writes[i] = writeDescriptorSet{
				SType: stWriteDescriptorSet, DstSet: r.set, DstBinding: uint32(i), DescriptorCount: 1,
				DescriptorType: descriptorTypeStorageBuffer, PBufferInfo: unsafe.Pointer(&r.infos[i]),
			}
		}
		d.rcall(d.fn.UpdateDescriptorSets, d.handle, uintptr(len(args)), uintptr(unsafe.Pointer(&r.writes[0])), 0, 0)
	}
	r.descCache[key] = r.set
	r.descWrites++
	return nil
}

// allocDescriptorSet allocates a set for layout into d.rec.set from the current pool, moving
// to a new pool when it is full.
func (d *Device) allocDescriptorSet(layout uint64) error {
	r := &d.rec
	for {
		if r.descIdx == len(r.descPools) {
			size := &descriptorPoolSize{Type: descriptorTypeStorageBuffer, DescriptorCount: descriptorSetsPerPool * MaxBindings}
			ci := &descriptorPoolCreateInfo{SType: stDescriptorPoolCreateInfo, MaxSets: descriptorSetsPerPool, PoolSizeCount: 1, PPoolSizes: unsafe.Pointer(size)}
			var pool uint64
			if err := check("vkCreateDescriptorPool", call(d.fn.CreateDescriptorPool, d.handle, uintptr(unsafe.Pointer(ci)), 0, uintptr(unsafe.Pointer(&pool)))); err != nil {
				return err
			}
			r.descPools = append(r.descPools, pool)
		}
		r.layout = layout
		r.allocInfo = descriptorSetAllocateInfo{SType: stDescriptorSetAllocateInfo, DescriptorPool: r.descPools[r.descIdx], DescriptorSetCount: 1, PSetLayouts: unsafe.Pointer(&r.layout)}
		res := d.rcallResult(d.fn.AllocateDescriptorSets, d.handle, uintptr(unsafe.Pointer(&r.allocInfo)), uintptr(unsafe.Pointer(&r.set)))
		switch res {
		case success:
			r.descSets++
			return nil
		case errOutOfPoolMemory, errFragmentedPool:
			r.descIdx++
		default:
			return check("vkAllocateDescriptorSets", res)
		}
	}
}

// trimDescriptorSets resets the pools and empties the cache once it holds descriptorCacheSets
// sets. The caller has waited for every submitted command buffer.
func (d *Device) trimDescriptorSets() {
	r := &d.rec
	if r.descSets < descriptorCacheSets {
		return
	}
	for _, p := range r.descPools[:min(r.descIdx+1, len(r.descPools))] {
		d.rcall(d.fn.ResetDescriptorPool, d.handle, uintptr(p), 0)
	}
	r.descIdx, r.descSets = 0, 0
	clear(r.descCache)
}
