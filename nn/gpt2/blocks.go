package gpt2

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// blocks is one flat range of floats held in allocations of at most cap elements each (a GPU
// driver bounds single allocations: 2 GiB on some); the layout never lets a tensor straddle
// two of them. Where allocations are unbounded it is one allocation, as before.
type blocks struct {
	cap   int
	parts []*tensor.Tensor
}

// newBlocks allocates size floats in parts of at most cap.
func newBlocks(b tensor.Backend, size, cap int) (*blocks, error) {
	bl := &blocks{cap: cap}
	for off := 0; off < size || off == 0; off += cap {
		n := max(1, min(cap, size-off))
		t, err := tensor.New(b, tensor.Float32, n)
		if err != nil {
			bl.free(b)
			return nil, err
		}
		bl.parts = append(bl.parts, t)
		if size <= off+cap {
			break
		}
	}
	return bl, nil
}

// len is the number of floats held.
func (bl *blocks) len() int {
	n := 0
	for _, p := range bl.parts {
		n += p.Storage.Len()
	}
	return n
}

// holds reports whether bl can back a layout of size floats: every part but the last is
// full, so any layout placed with the same cap fits when the total does.
func (bl *blocks) holds(size int) bool { return bl != nil && bl.len() >= size }

// view is the tensor at flat offset off, which the layout placed inside one part.
func (bl *blocks) view(off int, shape ...int) *tensor.Tensor {
	p := bl.parts[off/bl.cap]
	whole := &tensor.Tensor{Storage: p.Storage, Shape: tensor.Shape{p.Storage.Len()}}
	return whole.View(off%bl.cap, shape...)
}

// fill sets every float to v.
func (bl *blocks) fill(b tensor.Backend, v float32) {
	for _, p := range bl.parts {
		b.Fill(p, v)
	}
}

func (bl *blocks) free(b tensor.Backend) {
	if bl == nil {
		return
	}
	for _, p := range bl.parts {
		b.Free(p.Storage)
	}
	bl.parts = nil
}

// place returns where a tensor of n floats goes at or after off so that it does not straddle
// two parts of cap floats, or an error when it is larger than a part.
func place(off, n, cap int) (int, error) {
	if n > cap {
		return 0, fmt.Errorf("a tensor of %d floats (%s) exceeds the device's largest allocation of %d floats", n, tensor.FloatBytes(n), cap)
	}
	if n > 0 && off/cap != (off+n-1)/cap {
		off = (off/cap + 1) * cap
	}
	return off, nil
}
