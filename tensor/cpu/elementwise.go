package cpu

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

type ewKind uint8

const (
	ewFill ewKind = iota
	ewCopy
	ewCopyI32
	ewAdd
	ewMul
	ewAxpy
	ewScale
	ewGeluF
	ewGeluB
	ewDropout
)

// ewJob is an elementwise op over n elements in chunks of chunk elements.
type ewJob struct {
	kind      ewKind
	n, chunk  int
	out, x, y []float32
	oi, xi    []int32
	alpha     float32
	seed      uint64
}

func (j *ewJob) run(_, c int) {
	lo := c * j.chunk
	hi := min(lo+j.chunk, j.n)
	switch j.kind {
	case ewFill:
		switch {
		case j.n >= fillStreamMin:
			fillStream(j.out[lo:hi], j.alpha)
		case math.Float32bits(j.alpha) == 0:
			// +0 is all zero bytes: clear's vector stores beat the scalar loop.
			clear(j.out[lo:hi])
		default:
			fillLoop(j.out[lo:hi], j.alpha)
		}
	case ewCopy:
		copy(j.out[lo:hi], j.x[lo:hi])
	case ewCopyI32:
		copy(j.oi[lo:hi], j.xi[lo:hi])
	case ewAdd:
		o, x, y := j.out[lo:hi], j.x[lo:hi], j.y[lo:hi]
		for i := range o {
			o[i] = x[i] + y[i]
		}
	case ewMul:
		o, x, y := j.out[lo:hi], j.x[lo:hi], j.y[lo:hi]
		for i := range o {
			o[i] = x[i] * y[i]
		}
	case ewAxpy:
		axpy(j.out[lo:hi], j.x[lo:hi], j.alpha)
	case ewScale:
		o, a := j.out[lo:hi], j.alpha
		for i := range o {
			o[i] *= a
		}
	case ewGeluF:
		geluForward(j.out[lo:hi], j.x[lo:hi])
	case ewGeluB:
		geluBackward(j.out[lo:hi], j.x[lo:hi], j.y[lo:hi])
	case ewDropout:
		// tensor.DropoutScale with the seed's key hoisted out of the loop; a test checks every
		// mask value against tensor.DropoutScale.
		o, x, m, p := j.out[lo:hi], j.x[lo:hi], j.y[lo:hi], j.alpha
		x, m = x[:len(o)], m[:len(o)]
		key := tensor.Hash32(uint32(j.seed) ^ tensor.Hash32(uint32(j.seed>>32)))
		keep := 1 / (1 - p)
		for i := range o {
			s := keep
			if float32(tensor.Hash32(uint32(lo+i)^key)>>8)*(1.0/(1<<24)) < p {
				s = 0
			}
			m[i] = s
			o[i] = x[i] * s
		}
	}
}

// fillStreamMin is the fill size (elements) from which stores bypass the caches: larger than
// the last-level cache, the data would be evicted before it is read again anyway.
const fillStreamMin = 8 << 20

// runEW runs b.ew. Chunks are sized so that each is worth waking a worker for (a wake-up
// costs microseconds): large for memory-bound ops, smaller for the transcendental ones.
func (b *Backend) runEW(n int) {
	b.ew.chunk = ewChunkCheap
	if b.ew.kind == ewGeluF || b.ew.kind == ewGeluB || b.ew.kind == ewDropout {
		b.ew.chunk = ewChunk / 2
	}
	b.pool.do(&b.ew, ceilDiv(n, b.ew.chunk))
	b.ew = ewJob{}
}

// Fill implements tensor.Backend.
func (b *Backend) Fill(x *tensor.Tensor, v float32) { b.inPlace("Fill", ewFill, x, v) }

// Copy implements tensor.Backend.
func (b *Backend) Copy(dst, src *tensor.Tensor) {
	defer b.unlock(b.lock("Copy"))
	n := dst.Numel()
	if src.Numel() != n {
		panic(fmt.Sprintf("cpu: Copy: dst %v and src %v differ in size", dst.Shape, src.Shape))
	}
	if dst.DType() == tensor.Int32 {
		b.ew = ewJob{kind: ewCopyI32, n: n, oi: i32("Copy", "dst", dst, n), xi: i32("Copy", "src", src, n)}
	} else {
		b.ew = ewJob{kind: ewCopy, n: n, out: f32("Copy", "dst", dst, n), x: f32("Copy", "src", src, n)}
	}
	b.runEW(n)
}

// inPlace runs the elementwise op k on x with the scalar alpha.
func (b *Backend) inPlace(op string, k ewKind, x *tensor.Tensor, alpha float32) {
	defer b.unlock(b.lock(op))
	n := x.Numel()
	b.ew = ewJob{kind: k, n: n, out: f32(op, "x", x, n), alpha: alpha}
	b.runEW(n)
}

func (b *Backend) binary(op string, k ewKind, out, x, y *tensor.Tensor) {
	defer b.unlock(b.lock(op))
	n := out.Numel()
	b.ew = ewJob{kind: k, n: n, out: f32(op, "out", out, n), x: f32(op, "a", x, n), y: f32(op, "b", y, n)}
	b.runEW(n)
}

// Add implements tensor.Backend.
func (b *Backend) Add(out, x, y *tensor.Tensor) { b.binary("Add", ewAdd, out, x, y) }

// Mul implements tensor.Backend.
func (b *Backend) Mul(out, x, y *tensor.Tensor) { b.binary("Mul", ewMul, out, x, y) }

// Axpy implements tensor.Backend.
func (b *Backend) Axpy(y *tensor.Tensor, alpha float32, x *tensor.Tensor) {
	defer b.unlock(b.lock("Axpy"))
	n := y.Numel()
	b.ew = ewJob{kind: ewAxpy, n: n, out: f32("Axpy", "y", y, n), x: f32("Axpy", "x", x, n), alpha: alpha}
	b.runEW(n)
}

// Scale implements tensor.Backend.
func (b *Backend) Scale(x *tensor.Tensor, s float32) { b.inPlace("Scale", ewScale, x, s) }

// Dropout implements tensor.Backend.
func (b *Backend) Dropout(out, mask, inp *tensor.Tensor, p float32, seed uint64) {
	defer b.unlock(b.lock("Dropout"))
	n := out.Numel()
	b.ew = ewJob{kind: ewDropout, n: n, out: f32("Dropout", "out", out, n), x: f32("Dropout", "inp", inp, n),
		y: f32("Dropout", "mask", mask, n), alpha: p, seed: seed}
	b.runEW(n)
}

// reduceJob sums x (or x*x) in fixed chunks into float64 partials. Float64 is used because
// these reductions span whole parameter sets (~1e8 values for a global gradient norm).
type reduceJob struct {
	x       []float32
	squares bool
	part    []float64
}

func (j *reduceJob) run(_, c int) {
	lo := c * ewChunk
	j.part[c] = sumLanes(j.x[lo:min(lo+ewChunk, len(j.x))], j.squares)
}

func (b *Backend) reduce(op string, out, x *tensor.Tensor, squares bool) {
	defer b.unlock(b.lock(op))
	o := f32(op, "out", out, 1)
	n := x.Numel()
	nc := ceilDiv(n, ewChunk)
	if len(b.partial) < nc {
		b.partial = make([]float64, nc)
	}
	b.red = reduceJob{x: f32(op, "x", x, n), squares: squares, part: b.partial[:nc]}
	b.pool.do(&b.red, nc)
	var s float64
	for _, p := range b.partial[:nc] {
		s += p
	}
	o[0] = float32(s)
	b.red = reduceJob{}
}

// Sum implements tensor.Backend.
func (b *Backend) Sum(out, x *tensor.Tensor) { b.reduce("Sum", out, x, false) }

// SumSquares implements tensor.Backend.
func (b *Backend) SumSquares(out, x *tensor.Tensor) { b.reduce("SumSquares", out, x, true) }

// addTo sets dst[i] += src[i] (axpy with a = 1: the product is exact, so the bits are the sum's).
func addTo(dst, src []float32) { axpy(dst, src, 1) }
