// Package tensor defines tensors and the Backend interface, the seam between math and hardware.
//
// Tensors hold float32 or int32 values; helpers here are shared by every backend.
//
// A Tensor is a view (offset and shape) into backend-owned Storage. Data crosses between host
// and device only through Backend.Upload/Download, never implicitly inside an op.
package tensor

import (
	"fmt"
	"strings"
)

// DType is the element type of a tensor.
type DType uint8

const (
	Float32 DType = iota
	Int32
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Int32:
		return "int32"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Shape lists the extent of each dimension, outermost first.
type Shape []int

// Numel is the number of elements; an empty shape is a scalar with one element.
func (s Shape) Numel() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Storage is a block of backend memory. Its concrete type belongs to the backend that made it.
type Storage interface {
	Backend() Backend
	DType() DType
	Len() int // elements
}

// Tensor is a dense, row-major view into Storage.
type Tensor struct {
	Storage Storage
	Offset  int // in elements
	Shape   Shape
}

// Numel is the number of elements the view covers.
func (t *Tensor) Numel() int { return t.Shape.Numel() }

// DType is the element type of the underlying storage.
func (t *Tensor) DType() DType { return t.Storage.DType() }

// Backend is the backend that owns the storage.
func (t *Tensor) Backend() Backend { return t.Storage.Backend() }

// View returns a tensor sharing t's storage, starting offset elements into t, with the given
// shape. It panics if the view runs past t: views are made by code, not from user input.
func (t *Tensor) View(offset int, shape ...int) *Tensor {
	s := Shape(shape)
	if offset < 0 || offset+s.Numel() > t.Numel() {
		panic(fmt.Sprintf("tensor: view [%d, %d) outside tensor of %d elements", offset, offset+s.Numel(), t.Numel()))
	}
	return &Tensor{Storage: t.Storage, Offset: t.Offset + offset, Shape: s}
}

// Reshape returns a view of the same elements with another shape of equal size.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	if Shape(shape).Numel() != t.Numel() {
		panic(fmt.Sprintf("tensor: cannot reshape %v to %v", t.Shape, Shape(shape)))
	}
	return &Tensor{Storage: t.Storage, Offset: t.Offset, Shape: Shape(shape)}
}

func (t *Tensor) String() string {
	return fmt.Sprintf("Tensor%v %v on %s", t.Shape, t.DType(), t.Backend().Name())
}

// New allocates a zero-filled tensor of the given shape on b.
func New(b Backend, dtype DType, shape ...int) (*Tensor, error) {
	s := Shape(append([]int(nil), shape...))
	for _, d := range s {
		if d < 0 {
			return nil, fmt.Errorf("tensor: negative dimension in shape %v", s)
		}
	}
	st, err := b.Alloc(dtype, s.Numel())
	if err != nil {
		return nil, err
	}
	return &Tensor{Storage: st, Shape: s}, nil
}

// FromSlice allocates a float32 tensor on b holding a copy of data.
func FromSlice(b Backend, data []float32, shape ...int) (*Tensor, error) {
	if Shape(shape).Numel() != len(data) {
		return nil, fmt.Errorf("tensor: %d values do not fill shape %v", len(data), Shape(shape))
	}
	t, err := New(b, Float32, shape...)
	if err != nil {
		return nil, err
	}
	return t, b.Upload(t, data)
}

// FromInt32 allocates an int32 tensor on b holding a copy of data.
func FromInt32(b Backend, data []int32, shape ...int) (*Tensor, error) {
	if Shape(shape).Numel() != len(data) {
		return nil, fmt.Errorf("tensor: %d values do not fill shape %v", len(data), Shape(shape))
	}
	t, err := New(b, Int32, shape...)
	if err != nil {
		return nil, err
	}
	return t, b.UploadInt32(t, data)
}

// ToHost copies a float32 tensor to a new host slice, waiting for queued work first.
func ToHost(t *Tensor) ([]float32, error) {
	out := make([]float32, t.Numel())
	return out, t.Backend().Download(out, t)
}
