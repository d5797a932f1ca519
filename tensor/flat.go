package tensor

import (
	"fmt"
	"math"
)

// Flat is one logical vector of float32s (a model's parameters, their gradients, an optimizer's
// moments) made of pieces, the tensors the model views it as. A GPU driver bounds a single
// allocation (2 GiB on some), so the pieces are packed in order into as few allocations as the
// backend allows, and no piece straddles two; where allocations are unbounded (the CPU) the
// vector is one allocation, as a plain tensor would be.
type Flat struct {
	b      Backend
	n      int
	parts  []*Tensor
	starts []int // logical offset at which each part begins
}

// MaxAllocElems is how many float32s one allocation on b may hold.
func MaxAllocElems(b Backend) int {
	if l, ok := b.(AllocLimiter); ok {
		return max(1, l.MaxAllocElems())
	}
	return math.MaxInt
}

// NewFlat allocates a zeroed vector of the given pieces on b; a piece larger than one allocation
// is an error that names its size and the limit.
func NewFlat(b Backend, pieces []int) (*Flat, error) {
	limit := MaxAllocElems(b)
	f := &Flat{b: b}
	var sizes []int // floats per part
	used := 0
	for i, p := range pieces {
		if p < 0 {
			return nil, fmt.Errorf("tensor: piece %d has negative size %d", i, p)
		}
		if p > limit {
			return nil, &PieceTooLargeError{Index: i, Floats: p, Limit: limit}
		}
		if len(sizes) == 0 || used+p > limit {
			f.starts = append(f.starts, f.n)
			sizes = append(sizes, 0)
			used = 0
		}
		sizes[len(sizes)-1] += p
		used += p
		f.n += p
	}
	if len(sizes) == 0 {
		f.starts, sizes = []int{0}, []int{0}
	}
	return f, f.alloc(b, sizes)
}

// alloc makes the parts, of the given sizes.
func (f *Flat) alloc(b Backend, sizes []int) error {
	for _, s := range sizes {
		t, err := New(b, Float32, max(s, 1))
		if err != nil {
			f.Free()
			return err
		}
		f.parts = append(f.parts, t.View(0, s))
	}
	return nil
}

// NewFlatLike allocates a zeroed vector laid out as f, in as many allocations.
func NewFlatLike(f *Flat) (*Flat, error) {
	g := &Flat{b: f.b, n: f.n, starts: f.starts}
	sizes := make([]int, len(f.parts))
	for i, p := range f.parts {
		sizes[i] = p.Numel()
	}
	return g, g.alloc(f.b, sizes)
}

// Len is the number of floats in the vector.
func (f *Flat) Len() int { return f.n }

// Backend is the backend holding the vector.
func (f *Flat) Backend() Backend { return f.b }

// Parts are the vector's allocations in order, each a contiguous run of it; one on the CPU.
func (f *Flat) Parts() []*Tensor { return f.parts }

// PartStart is the logical offset of part i's first float.
func (f *Flat) PartStart(i int) int { return f.starts[i] }

// part finds the part holding logical offset off.
func (f *Flat) part(off int) int {
	i := len(f.starts) - 1
	for i > 0 && f.starts[i] > off {
		i--
	}
	return i
}

// View is the tensor of the given shape at logical offset off. It panics when the range
// straddles two parts: views follow the pieces, which are placed whole.
func (f *Flat) View(off int, shape ...int) *Tensor {
	i := f.part(off)
	return f.parts[i].View(off-f.starts[i], shape...)
}

// Range returns views covering [off, off+n) of the vector, one per part it touches.
func (f *Flat) Range(off, n int) []*Tensor {
	if off < 0 || n < 0 || off+n > f.n {
		panic(fmt.Sprintf("tensor: range [%d, %d) outside a flat vector of %d", off, off+n, f.n))
	}
	var out []*Tensor
	for i, p := range f.parts {
		lo, hi := max(off, f.starts[i]), min(off+n, f.starts[i]+p.Numel())
		if lo < hi {
			out = append(out, p.View(lo-f.starts[i], hi-lo))
		}
	}
	return out
}

// Upload copies src, the whole vector, to the device.
func (f *Flat) Upload(src []float32) error {
	if len(src) != f.n {
		return fmt.Errorf("tensor: %d values for a flat vector of %d", len(src), f.n)
	}
	for i, p := range f.parts {
		if err := f.b.Upload(p, src[f.starts[i]:f.starts[i]+p.Numel()]); err != nil {
			return err
		}
	}
	return nil
}

// Download copies the whole vector into dst, waiting for queued work first.
func (f *Flat) Download(dst []float32) error {
	if len(dst) != f.n {
		return fmt.Errorf("tensor: %d floats of room for a flat vector of %d", len(dst), f.n)
	}
	for i, p := range f.parts {
		if err := f.b.Download(dst[f.starts[i]:f.starts[i]+p.Numel()], p); err != nil {
			return err
		}
	}
	return nil
}

// ToHost copies the vector to a new host slice.
func (f *Flat) ToHost() ([]float32, error) {
	out := make([]float32, f.n)
	return out, f.Download(out)
}

// HostView is the vector's floats without a copy when they are host memory in one piece (the
// CPU backend's), with ok false otherwise. They are the vector itself: read them only while
// nothing writes it.
func (f *Flat) HostView() (floats []float32, ok bool) {
	if len(f.parts) != 1 || f.parts[0].Offset != 0 {
		return nil, false
	}
	h, ok := f.parts[0].Storage.(interface{ HostFloats() []float32 })
	if !ok {
		return nil, false
	}
	all := h.HostFloats()
	if len(all) < f.n {
		return nil, false
	}
	return all[:f.n:f.n], true
}

// Fill sets every float to v.
func (f *Flat) Fill(v float32) {
	for _, p := range f.parts {
		f.b.Fill(p, v)
	}
}

// Free releases the vector's memory.
func (f *Flat) Free() {
	if f == nil {
		return
	}
	for _, p := range f.parts {
		f.b.Free(p.Storage)
	}
	f.parts = nil
}

// PieceTooLargeError is a piece of a Flat larger than one allocation on its device: callers
// name the tensor from Index.
type PieceTooLargeError struct {
	Index, Floats, Limit int
}

func (e *PieceTooLargeError) Error() string {
	return fmt.Sprintf("tensor: piece %d, %s, exceeds the device's largest allocation, %s", e.Index, FloatBytes(e.Floats), FloatBytes(e.Limit))
}

// Named is the error with the piece's tensor named.
func (e *PieceTooLargeError) Named(name string) error {
	return fmt.Errorf("%s (%s) exceeds the device's largest allocation, %s (maxMemoryAllocationSize)", name, FloatBytes(e.Floats), FloatBytes(e.Limit))
}

// FloatBytes says how much memory n float32s take (HumanBytes).
func FloatBytes(n int) string { return HumanBytes(4 * int64(n)) }
