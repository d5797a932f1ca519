package vk

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/vkgrad/vkgrad/tensor"
)

// Backend implements tensor.Backend on a Vulkan device. Ops are recorded into one command
// buffer and submitted at Sync or at a Download; errors from queued work are returned there.
type Backend struct {
	dev *Device
	// precision is the products' operands (SetProductPrecision); coopMatOn routes them to the
	// cooperative-matrix kernel.
	precision tensor.Precision
	coopMatOn bool
	name      string
	reason    string
	owns      bool

	mu      sync.Mutex
	err     error   // first error an op could not return
	scratch *Buffer // reduction partials

	wg        uint32 // workgroup size of the one-dimensional kernels (a power of two)
	rowWG     uint32 // workgroup size of the row-reduction kernels (rowKernel)
	maxGroups uint32 // cap on workgroups per dispatch; kernels loop with a grid stride
	maxChunk  int    // elements per dispatch, bounded by maxStorageBufferRange

	subgroupReduce bool   // reductions run their subgroup variants (reduceKernel)
	attnBroadcast  bool   // attention runs the broadcast kernels (attnBroadcastOn)
	attnRB         bool   // flash attention runs the register-blocked kernels where they fit (attnRegisterBlockedOn)
	subgroupSize   uint32 // the subgroup size they require, 0 for the driver's choice
	partials       int    // most workgroups in the first pass of Sum and SumSquares
}

var _ tensor.Backend = (*Backend)(nil)

// maxGroups1D caps the workgroups of one-dimensional kernels: 4096 groups of 256 fill the
// largest GPUs, and more only add scheduling cost (lavapipe ran Add 4x slower at 65535).
const maxGroups1D = 4096

// NewBackend opens the device chosen by spec ("auto", "vulkan", "vulkan:N"; see Select) and
// returns a backend on it. Errors for which IsUnavailable is true mean callers should fall
// back to the CPU.
func NewBackend(spec string) (*Backend, error) {
	d, reason, err := OpenDevice(spec)
	if err != nil {
		return nil, err
	}
	b := NewBackendOn(d)
	b.reason, b.owns = reason, true
	return b, nil
}

// NewBackendOn returns a backend on an open device; closing the backend leaves the device
// open.
func NewBackendOn(d *Device) *Backend {
	wg := uint32(256)
	for wg > d.Info.MaxComputeWorkGroupInvocations || wg > d.Info.MaxComputeWorkGroupSize[0] {
		wg /= 2
	}
	return &Backend{
		dev:            d,
		name:           fmt.Sprintf("vulkan:%d (%s)", d.Info.Index, d.Info.Name),
		wg:             wg,
		rowWG:          rowWorkgroup(d.Info, wg),
		maxGroups:      min(d.Info.MaxComputeWorkGroupCount[0], maxGroups1D),
		maxChunk:       d.MaxWindowElems(),
		subgroupReduce: subgroupReductions(d.Info),
		attnBroadcast:  attnBroadcastOn(d.Info),
		attnRB:         attnRegisterBlockedOn(),
		subgroupSize:   pinnedSubgroupSize(d.Info, wg),
		partials:       reducePartials(d.Info),
	}
}

// Name is "vulkan:N (device name)".
func (b *Backend) Name() string { return b.name }

// Reason says why NewBackend chose this device.
func (b *Backend) Reason() string { return b.reason }

// Device is the device the backend runs on (for profiling and statistics).
func (b *Backend) Device() *Device { return b.dev }

// Close waits for queued work and releases the backend (and its device when NewBackend
// opened it).
func (b *Backend) Close() error {
	err := b.Sync()
	if b.scratch != nil {
		b.dev.Free(b.scratch)
		b.scratch = nil
	}
	if b.owns {
		if cerr := b.dev.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// storage is a tensor.Storage backed by a device buffer.
type storage struct {
	be    *Backend
	buf   *Buffer
	dtype tensor.DType
	n     int
}

func (s *storage) Backend() tensor.Backend { return s.be }
func (s *storage) DType() tensor.DType     { return s.dtype }
func (s *storage) Len() int                { return s.n }

// Alloc returns zero-filled device storage for n elements.
func (b *Backend) Alloc(dtype tensor.DType, n int) (tensor.Storage, error) {
	if n < 0 {
		return nil, fmt.Errorf("vk: Alloc of %d elements", n)
	}
	if dtype != tensor.Float32 && dtype != tensor.Int32 {
		return nil, fmt.Errorf("vk: Alloc: unsupported dtype %v", dtype)
	}
	buf, err := b.dev.Alloc(uint64(max(n, 1))*4, fmt.Sprintf("%v tensor of %d elements", dtype, n))
	if err != nil {
		return nil, err
	}
	return &storage{be: b, buf: buf, dtype: dtype, n: n}, nil
}

// MaxAllocElems is how many float32 values one allocation may hold on the device
// (tensor.AllocLimiter): callers spread larger buffers over several.
func (b *Backend) MaxAllocElems() int {
	return int(min(b.dev.MemoryStats().Limit, 1<<62) / 4)
}

// MemoryBudget is how much more device-local memory vkgrad may take: the driver's budget
// (VK_EXT_memory_budget) or the heaps' size, less what the pool already holds.
func (b *Backend) MemoryBudget() (uint64, string) {
	info, held := b.dev.Info, b.dev.MemoryStats().Reserved
	budget, src := info.DeviceLocalBudget(), "device-local heap"
	if info.HeapBudget != nil {
		src = "VK_EXT_memory_budget"
	}
	if held >= budget {
		return 0, src
	}
	return budget - held, src
}

// Free releases storage early.
func (b *Backend) Free(s tensor.Storage) {
	if st, ok := s.(*storage); ok && st.be == b {
		b.dev.Free(st.buf)
	}
}

// view returns t's storage, checking that it belongs to b and has the dtype; a mismatch is a
// programming error.
func (b *Backend) view(t *tensor.Tensor, dtype tensor.DType, op string) *storage {
	st, ok := t.Storage.(*storage)
	if !ok || st.be != b {
		panic(fmt.Sprintf("vk: %s: tensor is not on backend %s", op, b.name))
	}
	if st.dtype != dtype {
		panic(fmt.Sprintf("vk: %s: tensor is %v, want %v", op, st.dtype, dtype))
	}
	if t.Offset < 0 || t.Offset+t.Numel() > st.n {
		panic(fmt.Sprintf("vk: %s: view [%d, %d) outside storage of %d elements", op, t.Offset, t.Offset+t.Numel(), st.n))
	}
	return st
}

func (b *Backend) setErr(err error) {
	if err == nil {
		return
	}
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
}

func (b *Backend) takeErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// hostCopyTensor checks that t, the role ("source" or "destination") of a host copy of n
// values of dtype whose other side is other, is on b with that dtype and n elements.
func (b *Backend) hostCopyTensor(t *tensor.Tensor, dtype tensor.DType, n int, op, role, other string) (*storage, error) {
	st, ok := t.Storage.(*storage)
	if !ok || st.be != b {
		return nil, fmt.Errorf("vk: %s: %s is not on backend %s", op, role, b.name)
	}
	if st.dtype != dtype {
		return nil, fmt.Errorf("vk: %s: %s is %v, %s %v", op, role, st.dtype, other, dtype)
	}
	if n != t.Numel() {
		return nil, fmt.Errorf("vk: %s: %d values for a tensor of %d elements %v", op, n, t.Numel(), t.Shape)
	}
	return st, nil
}

func (b *Backend) upload(dst *tensor.Tensor, dtype tensor.DType, src unsafe.Pointer, n int, op string) error {
	st, err := b.hostCopyTensor(dst, dtype, n, op, "destination", "source")
	if err != nil {
		return err
	}
	if n == 0 {
		return b.takeErr()
	}
	if err := b.dev.Upload(st.buf, uint64(dst.Offset)*4, unsafe.Slice((*byte)(src), 4*n)); err != nil {
		return err
	}
	return b.takeErr()
}

func (b *Backend) download(dst unsafe.Pointer, n int, src *tensor.Tensor, dtype tensor.DType, op string) error {
	st, err := b.hostCopyTensor(src, dtype, n, op, "source", "destination")
	if err != nil {
		return err
	}
	if err := b.takeErr(); err != nil {
		return err
	}
	if n == 0 {
		return b.dev.Sync()
	}
	return b.dev.Download(unsafe.Slice((*byte)(dst), 4*n), st.buf, uint64(src.Offset)*4)
}

// Upload copies host values into a float32 tensor.
func (b *Backend) Upload(dst *tensor.Tensor, src []float32) error {
	return b.upload(dst, tensor.Float32, unsafe.Pointer(unsafe.SliceData(src)), len(src), "Upload")
}

// UploadInt32 copies host values into an int32 tensor.
func (b *Backend) UploadInt32(dst *tensor.Tensor, src []int32) error {
	return b.upload(dst, tensor.Int32, unsafe.Pointer(unsafe.SliceData(src)), len(src), "UploadInt32")
}

// Download waits for queued work and copies a float32 tensor to the host.
func (b *Backend) Download(dst []float32, src *tensor.Tensor) error {
	return b.download(unsafe.Pointer(unsafe.SliceData(dst)), len(dst), src, tensor.Float32, "Download")
}

// DownloadInt32 waits for queued work and copies an int32 tensor to the host.
func (b *Backend) DownloadInt32(dst []int32, src *tensor.Tensor) error {
	return b.download(unsafe.Pointer(unsafe.SliceData(dst)), len(dst), src, tensor.Int32, "DownloadInt32")
}

// Sync waits for all queued work and returns the first error any op met.
func (b *Backend) Sync() error {
	if err := b.takeErr(); err != nil {
		return err
	}
	return b.dev.Sync()
}

// scratchFor returns a scratch buffer of at least n floats, growing it when needed. A
// replaced buffer is freed; queued reductions that use it stay ordered by the barriers.
func (b *Backend) scratchFor(n int) (*Buffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.scratch != nil && b.scratch.Size() >= uint64(n)*4 {
		return b.scratch, nil
	}
	if b.scratch != nil {
		b.dev.Free(b.scratch)
	}
	s, err := b.dev.Alloc(uint64(max(n, 1024))*4, "reduction scratch")
	if err != nil {
		b.scratch = nil
		return nil, err
	}
	b.scratch = s
	return s, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// rowWorkgroup is the workgroup size of the row-reduction kernels: the device's subgroup width
// (a power of two from 8 to wg), so a workgroup is one subgroup wherever the driver keeps its
// default size.
func rowWorkgroup(info DeviceInfo, wg uint32) uint32 {
	n := uint32(8)
	for n < info.SubgroupSize && n < wg {
		n *= 2
	}
	return min(n, wg)
}
