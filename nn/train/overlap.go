package train

import (
	"slices"

	"github.com/vkgrad/vkgrad/tensor"
)

// overlap copies the rank's last micro-batch gradient to the host range by range, as the
// backward pass finishes each (the model's OnGradsFinal), and starts each range's sum across
// the ranks at once: the sum runs on the MPI thread while the backward pass goes on. The
// ranges come in an order fixed by the model, the same on every rank; what the model never
// reports is started, in buffer order, when Backward returns.
type overlap struct {
	grads   *tensor.Flat
	acc     *accum
	dst     []float32 // the host copy of this micro-batch's gradient
	scale   float32   // the sum is a mean: 1/K
	live    bool      // reduce ranges as they are reported (under MPI); else all at the end
	started [][2]int  // (offset, length) of each range started
	err     error
}

// newOverlap prepares the reduction of the last micro-batch, whose gradient goes to dst.
func (t *Trainer) newOverlap(dst []float32, scale float32) *overlap {
	// Alone, nothing runs beside the backward pass: one copy and one sum at the end.
	return &overlap{grads: t.Model.Grads(), acc: t.acc, dst: dst, scale: scale, live: t.comm != nil}
}

// finalRanges starts the sums of ranges the backward pass has finished.
func (o *overlap) finalRanges(ranges [][2]int) {
	for _, r := range ranges {
		o.start(r[0], r[1])
	}
}

// start copies a final range of the gradient to the host and starts its sum.
func (o *overlap) start(off, n int) {
	if o.err != nil {
		return
	}
	if o.err = o.download(off, n); o.err != nil {
		return
	}
	o.err = o.acc.grads.Start(off, off+n, o.scale)
	o.started = append(o.started, [2]int{off, n})
}

// download copies [off, off+n) of the gradient into the host copy.
func (o *overlap) download(off, n int) error {
	be := o.grads.Backend()
	for _, part := range o.grads.Range(off, n) {
		k := part.Numel()
		if err := be.Download(o.dst[off:off+k], part); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// finish starts the ranges not started yet, now all final, in buffer order.
func (o *overlap) finish() error {
	done := slices.Clone(o.started)
	slices.SortFunc(done, func(a, b [2]int) int { return a[0] - b[0] })
	next := 0
	for _, r := range done {
		if r[0] > next {
			o.start(next, r[0]-next)
		}
		next = max(next, r[0]+r[1])
	}
	if n := o.grads.Len(); next < n {
		o.start(next, n-next)
	}
	return o.err
}
