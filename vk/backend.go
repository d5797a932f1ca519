package vk

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/vkgrad/vkgrad/tensor"
)

// Backend implements tensor.Backend on a Vulkan device. Ops are recorded into one command
// buffer and submitted at Sync or at a Download; errors from queued work are returned there.
type Backend struct {
	dev *Device
	// coopMatOn routes products to the cooperative-matrix kernel (SetCoopMatMul).
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

func sameSize(op string, ts ...*tensor.Tensor) int {
	n := ts[0].Numel()
	for _, t := range ts[1:] {
		if t.Numel() != n {
			panic(fmt.Sprintf("vk: %s: sizes %d and %d differ", op, n, t.Numel()))
		}
	}
	return n
}

var (
	kFill       = Kernel{Shader: "fill", Bindings: 1, Push: 3}
	kFill4      = Kernel{Shader: "fill_vec4", Bindings: 1, Push: 3}
	kCopy       = Kernel{Shader: "copy", Bindings: 2, Push: 3}
	kCopy4      = Kernel{Shader: "copy_vec4", Bindings: 2, Push: 3}
	kAdd        = Kernel{Shader: "add", Bindings: 3, Push: 4}
	kMul        = Kernel{Shader: "mul", Bindings: 3, Push: 4}
	kAxpy       = Kernel{Shader: "axpy", Bindings: 2, Push: 4}
	kScale      = Kernel{Shader: "scale", Bindings: 1, Push: 3}
	kSum        = Kernel{Shader: "sum", Bindings: 2, Push: 3}
	kSumSquares = Kernel{Shader: "sumsquares", Bindings: 2, Push: 3}
	kSumVec4    = Kernel{Shader: "sum_vec4", Bindings: 2, Push: 3}
	kSumSqVec4  = Kernel{Shader: "sumsquares_vec4", Bindings: 2, Push: 3}
)

// Fill sets every element of x to v (converted to int32 for int32 tensors).
func (b *Backend) Fill(x *tensor.Tensor, v float32) {
	st, ok := x.Storage.(*storage)
	if !ok || st.be != b {
		panic("vk: Fill: tensor is not on backend " + b.name)
	}
	bits := math.Float32bits(v)
	if st.dtype == tensor.Int32 {
		bits = uint32(int32(v))
	}
	b.view(x, st.dtype, "Fill")
	n := x.Numel()
	args := []nnArg{nnRows(st, x, 1, n, true)}
	k, per := elemWidth(kFill, kFill4, n, args) // vec4s: a quarter of the stores
	u := uint32(per)
	b.dev.Cost(0, 4*float64(n))
	nnRun(b, k, "Fill", n/per, args, b.nnFlatGroups, func(_, cn int, f firsts) fillPush {
		return fillPush{N: uint32(cn), Off: f[0] / u, Bits: bits}
	})
}

// Copy copies src into dst (same size and dtype). Overlapping distinct views of one storage
// are not supported.
func (b *Backend) Copy(dst, src *tensor.Tensor) {
	n := sameSize("Copy", dst, src)
	s := b.view(src, src.DType(), "Copy")
	d := b.view(dst, s.dtype, "Copy")
	args := []nnArg{nnRows(d, dst, 1, n, true), nnRows(s, src, 1, n, false)}
	k, per := elemWidth(kCopy, kCopy4, n, args) // vec4s: a quarter of the loads and stores
	u := uint32(per)
	b.dev.Cost(0, 8*float64(n))
	nnRun(b, k, "Copy", n/per, args, b.nnFlatGroups,
		func(_, cn int, f firsts) copyPush { return copyPush{N: uint32(cn), OffDst: f[0] / u, OffSrc: f[1] / u} })
}

func (b *Backend) binary(k Kernel, op string, out, x, y *tensor.Tensor) {
	n := sameSize(op, out, x, y)
	o, a, c := b.view(out, tensor.Float32, op), b.view(x, tensor.Float32, op), b.view(y, tensor.Float32, op)
	b.dev.Cost(float64(n), 12*float64(n))
	nnRun(b, k, op, n, []nnArg{nnRows(o, out, 1, n, true), nnRows(a, x, 1, n, false), nnRows(c, y, 1, n, false)}, b.nnFlatGroups,
		func(_, cn int, f firsts) binaryPush {
			return binaryPush{N: uint32(cn), OffOut: f[0], OffA: f[1], OffB: f[2]}
		})
}

// Add sets out = a + b.
func (b *Backend) Add(out, x, y *tensor.Tensor) { b.binary(kAdd, "Add", out, x, y) }

// Mul sets out = a * b.
func (b *Backend) Mul(out, x, y *tensor.Tensor) { b.binary(kMul, "Mul", out, x, y) }

// Axpy sets y += alpha * x.
func (b *Backend) Axpy(y *tensor.Tensor, alpha float32, x *tensor.Tensor) {
	n := sameSize("Axpy", y, x)
	ys, xs := b.view(y, tensor.Float32, "Axpy"), b.view(x, tensor.Float32, "Axpy")
	b.dev.Cost(2*float64(n), 12*float64(n)) // reads y and x, writes y
	nnRun(b, kAxpy, "Axpy", n, []nnArg{nnRows(ys, y, 1, n, true), nnRows(xs, x, 1, n, false)}, b.nnFlatGroups,
		func(_, cn int, f firsts) axpyPush {
			return axpyPush{N: uint32(cn), OffY: f[0], OffX: f[1], Alpha: alpha}
		})
}

// Scale sets x *= s.
func (b *Backend) Scale(x *tensor.Tensor, s float32) {
	xs, n := b.view(x, tensor.Float32, "Scale"), x.Numel()
	b.dev.Cost(float64(n), 8*float64(n))
	nnRun(b, kScale, "Scale", n, []nnArg{nnRows(xs, x, 1, n, true)}, b.nnFlatGroups,
		func(_, cn int, f firsts) scalePush { return scalePush{N: uint32(cn), Off: f[0], S: s} })
}

// Sum sets out[0] = sum of x.
func (b *Backend) Sum(out, x *tensor.Tensor) { b.reduce(kSum, kSumVec4, "Sum", 1, out, x) }

// SumSquares sets out[0] = sum of x*x.
func (b *Backend) SumSquares(out, x *tensor.Tensor) {
	b.reduce(kSumSquares, kSumSqVec4, "SumSquares", 2, out, x)
}

// reducePartials is the most workgroups the first pass of Sum and SumSquares uses. 1024 fill a
// GPU; a CPU implementation runs each workgroup's invocations in turn on one of a few threads
// and pays per workgroup: lavapipe (two threads) took 18 ms for the sum of squares of 7M floats
// with 1024 partials, 11 with 256, 5 to 9 with 64 and 5 to 6 with 32 or 16.
func reducePartials(info DeviceInfo) int {
	if info.Type == DeviceCPU {
		return 64
	}
	return 1024
}

// reduce runs a deterministic two-pass reduction: each chunk of x is reduced by up to
// b.partials workgroups into consecutive partials, then one workgroup sums the partials into
// out[0]. When one workgroup covers all of x the first pass writes out directly. Where x
// starts on a vec4 and has whole vec4s, the first pass runs k4, k's twin that reads vec4s
// (the same bits: each lane adds a vec4 at a time either way). flops is the arithmetic per
// element of x, for the profile.
func (b *Backend) reduce(k, k4 Kernel, op string, flops float64, out, x *tensor.Tensor) {
	if out.Numel() != 1 {
		panic(fmt.Sprintf("vk: %s: out has %d elements, want 1", op, out.Numel()))
	}
	ost, xs := b.view(out, tensor.Float32, op), b.view(x, tensor.Float32, op)
	n := x.Numel()
	per := 1 // floats per element of the kernel's x
	if n%4 == 0 && b.maxChunk%4 == 0 && vec4Aligned([]nnArg{{buf: xs.buf, off: x.Offset}}) {
		k, per = k4, 4
	}
	k = b.reduceKernel(k)
	k.Local = [3]uint32{b.wg, 1, 1}
	wg := int(b.wg)
	// Both variants give each lane a vec4 an iteration.
	groupsFor := func(cn int) int { return max(1, min(((cn+3)/4+wg-1)/wg, b.partials, int(b.maxGroups))) }
	outArg := func() (Arg, bool) {
		w, err := b.dev.Window(ost.buf, out.Offset, 1)
		if err != nil {
			b.setErr(err)
			return Arg{}, false
		}
		return Arg{W: w, Write: true}, true
	}
	b.dev.Cost(flops*float64(n), 4*float64(n))
	if n <= b.maxChunk && groupsFor(n) == 1 {
		wo, ok := outArg()
		if !ok {
			return
		}
		wx, err := b.dev.Window(xs.buf, x.Offset, n)
		if err != nil {
			b.setErr(err)
			return
		}
		push := sumPush{N: uint32(n / per), OffOut: wo.W.First, OffX: wx.First / uint32(per)}
		b.setErr(b.dev.Dispatch(k, [3]uint32{1, 1, 1}, pushOf(&push), wo, Arg{W: wx}))
		return
	}
	total := 0
	for c := 0; c < n; c += b.maxChunk {
		total += groupsFor(min(b.maxChunk, n-c))
	}
	scratch, err := b.scratchFor(total)
	if err != nil {
		b.setErr(err)
		return
	}
	at := 0
	for c := 0; c < n; c += b.maxChunk {
		cn := min(b.maxChunk, n-c)
		g := groupsFor(cn)
		wp, err1 := b.dev.Window(scratch, at, g)
		wx, err2 := b.dev.Window(xs.buf, x.Offset+c, cn)
		if err1 != nil || err2 != nil {
			b.setErr(firstErr(err1, err2))
			return
		}
		push := sumPush{N: uint32(cn / per), OffOut: wp.First, OffX: wx.First / uint32(per)}
		if err := b.dev.Dispatch(k, [3]uint32{uint32(g), 1, 1}, pushOf(&push), Arg{W: wp, Write: true}, Arg{W: wx}); err != nil {
			b.setErr(err)
			return
		}
		at += g
	}
	wo, ok := outArg()
	if !ok {
		return
	}
	wp, err := b.dev.Window(scratch, 0, total)
	if err != nil {
		b.setErr(err)
		return
	}
	ks := b.reduceKernel(kSum)
	ks.Local = k.Local
	push := sumPush{N: uint32(total), OffOut: wo.W.First, OffX: wp.First}
	b.dev.Cost(float64(total), 4*float64(total+1))
	b.setErr(b.dev.Dispatch(ks, [3]uint32{1, 1, 1}, pushOf(&push), wo, Arg{W: wp}))
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
