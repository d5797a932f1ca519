package vk

import (
	"errors"
	"fmt"
	"unsafe"
)

// Alloc reserves size bytes of device memory, zero-filled (the fill is queued). label names
// the buffer in errors, e.g. "float32 tensor of 38633472 elements".
func (d *Device) Alloc(size uint64, label string) (*Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if size%4 != 0 {
		return nil, fmt.Errorf("vk: %s: size %d is not a multiple of 4 bytes", label, size)
	}
	b, err := d.pool.alloc(size, label)
	if err != nil {
		return nil, err
	}
	if err := d.fillRegion(b.block, b.off, alignUp(max(size, 4), 4), 0); err != nil {
		d.freeLocked(b)
		return nil, err
	}
	return b, nil
}

// Free returns a buffer to the pool. Commands already recorded that use it still see its
// contents: later writes to the reused range wait behind them through the usual barriers,
// and dedicated blocks are destroyed only after the submission completes.
func (d *Device) Free(b *Buffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.freeLocked(b)
}

func (d *Device) freeLocked(b *Buffer) {
	if b == nil || b.freed || d.handle == 0 {
		return
	}
	b.freed = true
	d.pool.release(b)
	if b.block.dedicated {
		if d.rec.recording {
			d.rec.deferred = append(d.rec.deferred, b.block)
		} else {
			d.pool.destroyBlock(b.block)
		}
	}
}

// FillWords records a fill of count 32-bit words of b, from word elem, with word.
func (d *Device) FillWords(b *Buffer, elem, count int, word uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := checkRange(b, elem, count); err != nil {
		return err
	}
	return d.fillRegion(b.block, b.off+uint64(elem)*4, uint64(count)*4, word)
}

// CopyWords records a copy of count 32-bit words from src (from word srcElem) to dst (from
// word dstElem). Overlapping ranges of one buffer are not allowed.
func (d *Device) CopyWords(dst *Buffer, dstElem int, src *Buffer, srcElem, count int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := checkRange(dst, dstElem, count); err != nil {
		return err
	}
	if err := checkRange(src, srcElem, count); err != nil {
		return err
	}
	so, do := src.off+uint64(srcElem)*4, dst.off+uint64(dstElem)*4
	n := uint64(count) * 4
	if n == 0 {
		return nil
	}
	if src.block == dst.block && so < do+n && do < so+n {
		return errors.New("vk: CopyWords with overlapping source and destination")
	}
	return d.copyRegion(src.block, so, dst.block, do, n)
}

func checkRange(b *Buffer, elem, count int) error {
	if b == nil || b.freed {
		return errors.New("vk: use of a nil or freed buffer")
	}
	if elem < 0 || count < 0 || uint64(elem+count)*4 > b.size {
		return fmt.Errorf("vk: range [%d, %d) outside %s of %d words", elem, elem+count, b.label, b.size/4)
	}
	return nil
}

// Upload copies data into b at byte offset off through the staging ring. The copy is queued
// behind earlier commands; data may be reused as soon as Upload returns.
func (d *Device) Upload(b *Buffer, off uint64, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := checkBytes(b, off, uint64(len(data))); err != nil {
		return err
	}
	ring := d.staging
	for len(data) > 0 {
		if d.stageHead >= ring.size {
			if err := d.flushLocked(); err != nil {
				return err
			}
		}
		n := min(uint64(len(data)), ring.size-d.stageHead)
		copy(unsafe.Slice((*byte)(unsafe.Add(ring.block.mapped, d.stageHead)), n), data[:n])
		if err := d.copyRegion(ring.block, d.stageHead, b.block, b.off+off, n); err != nil {
			return err
		}
		d.stageHead = alignUp(d.stageHead+n, 256)
		data = data[n:]
		off += n
	}
	return nil
}

// Download waits for queued work and copies len(out) bytes of b from byte offset off.
func (d *Device) Download(out []byte, b *Buffer, off uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := checkBytes(b, off, uint64(len(out))); err != nil {
		return err
	}
	ring := d.staging
	for len(out) > 0 {
		if d.stageHead >= ring.size {
			if err := d.flushLocked(); err != nil {
				return err
			}
		}
		start := d.stageHead
		n := min(uint64(len(out)), ring.size-start)
		if err := d.copyRegion(b.block, b.off+off, ring.block, start, n); err != nil {
			return err
		}
		d.rec.hostRead = true
		if err := d.flushLocked(); err != nil {
			return err
		}
		copy(out[:n], unsafe.Slice((*byte)(unsafe.Add(ring.block.mapped, start)), n))
		out = out[n:]
		off += n
	}
	return d.err
}

func checkBytes(b *Buffer, off, n uint64) error {
	if b == nil || b.freed {
		return errors.New("vk: use of a nil or freed buffer")
	}
	if off+n > b.size || off%4 != 0 || n%4 != 0 {
		return fmt.Errorf("vk: bytes [%d, %d) outside %s of %d bytes or not 4-byte aligned", off, off+n, b.label, b.size)
	}
	return nil
}
