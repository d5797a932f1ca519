// Package cpu implements tensor.Backend on the CPU. It is the numerical reference for the
// project: its kernels follow llm.c's CPU reference (train_gpt2.c) operation by operation, in
// float32 and in llm.c's order of additions (LayerNorm, softmax and attention sums, bias,
// weight and embedding gradients). Exponentials and tanh are float64 values accurate to 1e-14
// rounded to float32, as correctly rounded as glibc's expf and tanhf but for rare near-ties.
// Where llm.c's loops are not a reference (log-softmax at a temperature, the whole-tensor Sum
// and SumSquares) sums run in float64.
//
// Every op is split into chunks whose boundaries depend only on the op's dimensions, never on
// the number of workers, and every reduction combines per-chunk or per-column partials in a
// fixed order. Results are therefore bitwise identical run to run and for any thread count.
// Ops on one Backend are serialised; a Backend may be shared by goroutines. Matrix products go
// to package gemm.
//
// On amd64 with AVX2 and FMA, vector kernels run the exponential, GELU, attention, AdamW,
// Axpy, log-softmax, the cross-entropy gradient and the softmax division. Apart from the exponential's polynomial they perform the portable Go
// loops' operations in the same order without fused multiply-adds, so they give the same bits
// (tests check this). Built with the purego tag, or on other architectures, the portable
// loops take math.Exp, so exponential-based results can differ from an AVX2 build in rare
// float32 roundings.
package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/vkgrad/vkgrad/tensor"
)

// Backend is the CPU implementation of tensor.Backend.
type Backend struct {
	mu      sync.Mutex
	threads int
	pool    *pool
	// precision is MatMul's operand format (SetProductPrecision); FP32 by default.
	precision tensor.Precision

	// Per-op argument blocks, reused so that dispatching an op allocates nothing.
	ew        ewJob
	red       reduceJob
	adam      adamJob
	ln        lnJob
	colj      colJob
	attF      attFwdJob
	attB      attBwdJob
	attD      attDecJob
	enc       encJob
	llama     llamaJob
	xent      xentJob
	lsg       lsgJob
	partial   []float64
	scratch   [][]float32 // per worker
	scratch64 [][]float64 // per worker

	profile map[string]*opStat // per-op wall time; nil unless SetProfiling(true)
}

var _ tensor.Backend = (*Backend)(nil)

// New returns a CPU backend with runtime.GOMAXPROCS(0) workers.
func New() *Backend { return NewWithThreads(runtime.GOMAXPROCS(0)) }

// NewWithThreads returns a CPU backend that runs each operation on at most n goroutines (at
// least 1): the caller and the process's shared helpers (package workpool). The backend owns
// no goroutines of its own, so backends cost nothing to create or drop.
func NewWithThreads(n int) *Backend {
	if n < 1 {
		n = 1
	}
	return &Backend{threads: n, pool: newPool(n), scratch: make([][]float32, n), scratch64: make([][]float64, n)}
}

// Threads reports the number of workers.
func (b *Backend) Threads() int { return b.threads }

// Close ends the backend's use of the shared helpers: it still works afterwards, on the
// calling goroutine alone. It holds nothing else to release and never fails.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pool = newPool(1)
	b.threads = 1
	return nil
}

// Name implements tensor.Backend.
func (b *Backend) Name() string { return "cpu" }

type storage struct {
	be *Backend
	dt tensor.DType
	f  []float32
	i  []int32
}

func (s *storage) Backend() tensor.Backend { return s.be }
func (s *storage) DType() tensor.DType     { return s.dt }
func (s *storage) Len() int {
	if s.dt == tensor.Int32 {
		return len(s.i)
	}
	return len(s.f)
}

// HostFloats is the storage's floats themselves (nil for int32 storage): see
// tensor.Flat.HostView.
func (s *storage) HostFloats() []float32 { return s.f }

// Alloc implements tensor.Backend.
func (b *Backend) Alloc(dtype tensor.DType, n int) (tensor.Storage, error) {
	if n < 0 {
		return nil, fmt.Errorf("cpu: cannot allocate %d elements", n)
	}
	switch dtype {
	case tensor.Float32:
		f := make([]float32, n)
		adviseHugePages(f)
		return &storage{be: b, dt: dtype, f: f}, nil
	case tensor.Int32:
		return &storage{be: b, dt: dtype, i: make([]int32, n)}, nil
	}
	return nil, fmt.Errorf("cpu: unsupported dtype %v", dtype)
}

// Free implements tensor.Backend.
func (b *Backend) Free(s tensor.Storage) {
	if st, ok := s.(*storage); ok {
		st.f, st.i = nil, nil
	}
}

// Upload implements tensor.Backend.
func (b *Backend) Upload(dst *tensor.Tensor, src []float32) error {
	return upload(dst, src, viewF32)
}

// UploadInt32 implements tensor.Backend.
func (b *Backend) UploadInt32(dst *tensor.Tensor, src []int32) error {
	return upload(dst, src, viewI32)
}

// Download implements tensor.Backend.
func (b *Backend) Download(dst []float32, src *tensor.Tensor) error {
	return download(dst, src, viewF32)
}

// DownloadInt32 implements tensor.Backend.
func (b *Backend) DownloadInt32(dst []int32, src *tensor.Tensor) error {
	return download(dst, src, viewI32)
}

func upload[E any](dst *tensor.Tensor, src []E, view func(*tensor.Tensor) ([]E, error)) error {
	d, err := view(dst)
	if err != nil {
		return err
	}
	if len(d) != len(src) {
		return fmt.Errorf("cpu: upload of %d values into tensor %v of %d elements", len(src), dst.Shape, len(d))
	}
	copy(d, src)
	return nil
}

func download[E any](dst []E, src *tensor.Tensor, view func(*tensor.Tensor) ([]E, error)) error {
	s, err := view(src)
	if err != nil {
		return err
	}
	if len(s) != len(dst) {
		return fmt.Errorf("cpu: download of tensor %v (%d elements) into %d values", src.Shape, len(s), len(dst))
	}
	copy(dst, s)
	return nil
}

// Sync implements tensor.Backend; CPU ops finish before they return.
func (b *Backend) Sync() error { return nil }

func viewF32(t *tensor.Tensor) ([]float32, error) {
	return view(t, tensor.Float32, func(st *storage) []float32 { return st.f })
}

func viewI32(t *tensor.Tensor) ([]int32, error) {
	return view(t, tensor.Int32, func(st *storage) []int32 { return st.i })
}

// view returns t's elements in CPU storage of type dt; elems picks that type's slice.
func view[E any](t *tensor.Tensor, dt tensor.DType, elems func(*storage) []E) ([]E, error) {
	if t == nil {
		return nil, fmt.Errorf("cpu: nil tensor")
	}
	st, ok := t.Storage.(*storage)
	if !ok {
		return nil, fmt.Errorf("cpu: tensor %v is not in CPU storage", t.Shape)
	}
	if st.dt != dt {
		return nil, fmt.Errorf("cpu: tensor %v is %v, want %v", t.Shape, st.dt, dt)
	}
	all := elems(st)
	n := t.Numel()
	if t.Offset < 0 || t.Offset+n > len(all) {
		return nil, fmt.Errorf("cpu: view [%d,%d) outside storage of %d elements", t.Offset, t.Offset+n, len(all))
	}
	return all[t.Offset : t.Offset+n : t.Offset+n], nil
}

// Float32s returns the elements of a float32 CPU tensor view without copying. It panics if t
// is not a float32 tensor in CPU storage.
func Float32s(t *tensor.Tensor) []float32 { return mustView(viewF32(t)) }

// Int32s returns the elements of an int32 CPU tensor view without copying. It panics if t is
// not an int32 tensor in CPU storage.
func Int32s(t *tensor.Tensor) []int32 { return mustView(viewI32(t)) }

func mustView[E any](s []E, err error) []E {
	if err != nil {
		panic(err)
	}
	return s
}

// f32 returns the first n elements of t for op, panicking on a programming error.
func f32(op, arg string, t *tensor.Tensor, n int) []float32 { return operand(op, arg, t, n, viewF32) }

// i32 is f32 for int32 tensors.
func i32(op, arg string, t *tensor.Tensor, n int) []int32 { return operand(op, arg, t, n, viewI32) }

func operand[E any](op, arg string, t *tensor.Tensor, n int, view func(*tensor.Tensor) ([]E, error)) []E {
	s, err := view(t)
	if err != nil {
		panic(fmt.Sprintf("cpu: %s: %s: %v", op, arg, err))
	}
	if len(s) < n {
		panic(fmt.Sprintf("cpu: %s: %s has %d elements, needs %d", op, arg, len(s), n))
	}
	return s[:n:n]
}

func dims(op string, d ...int) {
	for _, v := range d {
		if v < 0 {
			panic(fmt.Sprintf("cpu: %s: negative dimension %d", op, v)) // v, not d, so d stays on the stack
		}
	}
}

// workerScratch makes each worker's scratch at least n floats (before dispatch).
func (b *Backend) workerScratch(n int) {
	for w := range b.scratch {
		if len(b.scratch[w]) < n {
			b.scratch[w] = make([]float32, n)
		}
	}
}

// workerScratch64 makes each worker's float64 scratch at least n values (before dispatch).
func (b *Backend) workerScratch64(n int) {
	for w := range b.scratch64 {
		if len(b.scratch64[w]) < n {
			b.scratch64[w] = make([]float64, n)
		}
	}
}

// Chunk sizes are fixed so the split (and any reduction order) never depends on the thread count.
const (
	ewChunk      = 16384 // elements per chunk of reductions and AdamW
	ewChunkCheap = 65536 // elements per chunk of memory-bound elementwise ops
	colChunk     = 32    // columns per chunk of a column-parallel reduction
	rowWork      = 16384 // approximate elements of work per chunk of a row-parallel op
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// rowsPer is the number of rows per chunk for rows of cost elements each.
func rowsPer(cost int) int {
	if cost <= 0 {
		return rowWork
	}
	return max(1, rowWork/cost)
}
