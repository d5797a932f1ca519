package vk

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// The fused neural-network ops: layernorm and RMSNorm (norm.go), GELU (gelu.go), rotary
// embeddings (rope.go), the SiLU-gated MLP activation (swiglu.go), attention and the packing
// of q, k and v (attention.go), token embeddings (embedding.go), softmax and losses
// (crossentropy.go), dropout (elementwise.go). Each follows the CPU backend (and so llm.c) op
// for op; the shaders' comments say how. Row-wise ops run one workgroup per row with
// reductions in shared memory in a fixed tree, and column sums (the norms' dweight and dbias,
// the embedding scatter-add) add rows in a fixed order without float atomics, so every result
// is repeatable bit for bit. Arguments larger than one storage-buffer window are processed in
// chunks of rows (sequences for attention and the embedding, vocabulary rows for wte) by the
// helpers below.

// nnArg is one buffer argument of a kernel that runs over rows (elements, logit rows,
// sequences, blocks of rows): rows [r0, r0+cr) of it are the elements off+per*r0 .. off+per*(r0+cr),
// clipped to off+n. per 0 binds elements [off, off+n) whole in every chunk; reuse binds
// per*cr elements from off in every chunk (a scratch each chunk overwrites).
type nnArg struct {
	buf    *Buffer
	off    int
	per    int
	n      int
	write  bool
	reuse  bool
	unused bool // a stand-in the dispatch does not touch (Arg.Unused)
}

// nnRows is a nnArg over a tensor view.
func nnRows(st *storage, t *tensor.Tensor, per, n int, write bool) nnArg {
	return nnArg{buf: st.buf, off: t.Offset, per: per, n: n, write: write}
}

// nnWhole is a nnArg binding n elements of a tensor view in every chunk.
func nnWhole(st *storage, t *tensor.Tensor, n int) nnArg {
	return nnArg{buf: st.buf, off: t.Offset, n: n}
}

// nnWholeWritten is nnWhole for a view every chunk adds to, so that each chunk waits for the
// one before it (a GPU runs dispatches without a barrier between them at once).
func nnWholeWritten(st *storage, t *tensor.Tensor, n int) nnArg {
	return nnArg{buf: st.buf, off: t.Offset, n: n, write: true}
}

// nnChunkRows is the most rows one dispatch may cover so that every argument's window fits in
// maxStorageBufferRange, or an error when a single row (or a whole argument) does not fit.
func (b *Backend) nnChunkRows(op string, rows int, args []nnArg) (int, error) {
	cr := max(rows, 1)
	for _, a := range args {
		if a.per == 0 {
			if a.n > b.maxChunk {
				return 0, fmt.Errorf("vk: %s: an argument of %d elements exceeds a storage-buffer window of %d", op, a.n, b.maxChunk)
			}
			continue
		}
		if a.per > b.maxChunk {
			return 0, fmt.Errorf("vk: %s: a row of %d elements exceeds a storage-buffer window of %d", op, a.per, b.maxChunk)
		}
		cr = min(cr, b.maxChunk/a.per)
	}
	return cr, nil
}

// vec4Aligned says whether every argument starts on a 16-byte boundary of its buffer. Then
// each window's First counts whole vec4s however the rows are chunked (in vec4 rows), since
// minStorageBufferOffsetAlignment is a power of two: a multiple of 16, or a divisor of it.
func vec4Aligned(args []nnArg) bool {
	for _, a := range args {
		if (a.buf.off+4*uint64(a.off))%16 != 0 {
			return false
		}
	}
	return true
}

// elemWidth is the kernel of an elementwise op over n elements and the elements each invocation
// takes: k4, k's twin over vec4s, where n and every argument allow it (vec4Aligned), with args
// turned into rows of four; else k and 1. The caller counts rows and per-element Firsts in
// units of that width.
func elemWidth(k, k4 Kernel, n int, args []nnArg) (Kernel, int) {
	if n%4 != 0 || !vec4Aligned(args) {
		return k, 1
	}
	for i := range args {
		args[i].per = 4
	}
	return k4, 4
}

// firsts are the First of each argument's window in a chunk, in binding order.
type firsts [MaxBindings]uint32

// nnRun dispatches k over rows in chunks whose windows fit a storage buffer window.
// groups gives the workgroup counts for a chunk of cr rows; push fills k's push-constant
// struct (push.go) from the chunk's first row, its row count and the First of each argument's
// window. It takes an array and returns a struct, not slices, so that neither the closures
// nor what they return need the heap.
func nnRun[P any](b *Backend, k Kernel, op string, rows int, args []nnArg, groups func(cr int) [3]uint32, push func(r0, cr int, f firsts) P) {
	if rows <= 0 {
		return
	}
	if len(args) > MaxBindings || k.Push > MaxPushWords {
		panic(fmt.Sprintf("vk: %s: kernel %s takes %d bindings and %d push words", op, k.Shader, len(args), k.Push))
	}
	if k.Local == ([3]uint32{}) { // kernels with a fixed workgroup size say so
		k.Local = [3]uint32{b.wg, 1, 1}
	}
	chunk, err := b.nnChunkRows(op, rows, args)
	if err != nil {
		b.setErr(err)
		return
	}
	var wargs [MaxBindings]Arg
	var first firsts
	for r0 := 0; r0 < rows; r0 += chunk {
		cr := min(chunk, rows-r0)
		for i, a := range args {
			lo, hi := a.off, a.off+a.n
			switch {
			case a.reuse:
				hi = a.off + a.per*cr
			case a.per > 0:
				lo, hi = a.off+a.per*r0, min(a.off+a.per*(r0+cr), a.off+a.n)
			}
			w, err := b.dev.Window(a.buf, lo, hi-lo)
			if err != nil {
				b.setErr(err)
				return
			}
			wargs[i] = Arg{W: w, Write: a.write, Unused: a.unused}
			first[i] = w.First
		}
		pw := push(r0, cr, first)
		if err := b.dev.Dispatch(k, groups(cr), pushOf(&pw), wargs[:len(args)]...); err != nil {
			b.setErr(err)
			return
		}
	}
}

// rowKernel is k, in the variant reduceKernel picks, with a workgroup of rowWG invocations,
// for the kernels that reduce each row (norms, softmaxes): one subgroup's width, so a row
// reduces within one subgroup (or in a shared-memory tree a few levels deep) and no lane idles
// on short rows. Measured on lavapipe (subgroup 8), gpt2-mini's layernorm_forward (rows of
// 128) took 4759 us a call with 256 invocations, 1185 with 64, 669 with 32 and 288 with 8.
func (b *Backend) rowKernel(k Kernel) Kernel {
	k = b.reduceKernel(k)
	k.Local = [3]uint32{b.rowWG, 1, 1}
	return k
}

// nnRowGroups is one workgroup per row, capped (the kernels loop over rows with a stride).
func (b *Backend) nnRowGroups(rows int) [3]uint32 {
	return [3]uint32{uint32(min(rows, int(b.maxGroups))), 1, 1}
}

// nnFlatGroups covers n invocations of the one-dimensional workgroup size, capped.
func (b *Backend) nnFlatGroups(n int) [3]uint32 {
	wg := int(b.wg)
	return [3]uint32{uint32(max(1, min((n+wg-1)/wg, int(b.maxGroups)))), 1, 1}
}

// nnOperand checks that t is on b with the dtype and at least n elements (fewer is a
// programming error) and returns its storage.
func (b *Backend) nnOperand(op, name string, t *tensor.Tensor, dtype tensor.DType, n int) *storage {
	if t == nil {
		panic(fmt.Sprintf("vk: %s: %s is nil", op, name))
	}
	st := b.view(t, dtype, op)
	if t.Numel() < n {
		panic(fmt.Sprintf("vk: %s: %s has %d elements, needs %d", op, name, t.Numel(), n))
	}
	return st
}

func nnF32(b *Backend, op, name string, t *tensor.Tensor, n int) *storage {
	return b.nnOperand(op, name, t, tensor.Float32, n)
}

func nnI32(b *Backend, op, name string, t *tensor.Tensor, n int) *storage {
	return b.nnOperand(op, name, t, tensor.Int32, n)
}

func nnDims(op string, d ...int) {
	for _, v := range d {
		if v < 0 {
			panic(fmt.Sprintf("vk: %s: negative dimension %d", op, v))
		}
	}
}
