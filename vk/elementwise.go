package vk

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

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
	kDropout    = Kernel{Shader: "dropout", Bindings: 3, Push: 8}
)

func sameSize(op string, ts ...*tensor.Tensor) int {
	n := ts[0].Numel()
	for _, t := range ts[1:] {
		if t.Numel() != n {
			panic(fmt.Sprintf("vk: %s: sizes %d and %d differ", op, n, t.Numel()))
		}
	}
	return n
}

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

// Dropout sets mask from tensor.DropoutScale's hash of (seed, element index) and out = inp *
// mask. The seed's key and 1/(1-p) are computed here in float32 as DropoutScale does, so the
// masks are the same bits; the shader hashes the element indices.
func (b *Backend) Dropout(out, mask, inp *tensor.Tensor, p float32, seed uint64) {
	const op = "Dropout"
	n := out.Numel()
	os, ms, is := nnF32(b, op, "out", out, n), nnF32(b, op, "mask", mask, n), nnF32(b, op, "inp", inp, n)
	key := tensor.Hash32(uint32(seed) ^ tensor.Hash32(uint32(seed>>32)))
	keep := 1 / (1 - p)
	b.dev.Cost(float64(n), 12*float64(n))
	nnRun(b, kDropout, op, n, []nnArg{
		nnRows(os, out, 1, n, true), nnRows(ms, mask, 1, n, true), nnRows(is, inp, 1, n, false),
	}, b.nnFlatGroups, func(r0, cr int, f firsts) dropoutPush {
		return dropoutPush{N: uint32(cr), Base: uint32(r0), Key: key, Prob: p, Keep: keep, OffOut: f[0], OffMask: f[1], OffInp: f[2]}
	})
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
