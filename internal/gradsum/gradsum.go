// Package gradsum adds a step's micro-batch gradients in micro-batch order across MPI ranks.
//
// Each rank keeps the gradients of the micro-batches it computes on the host, and
// mpi.Reducer does the ordered sum, so a step gives the same bits with any number of ranks,
// one process without MPI included.
package gradsum

import (
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/tensor"
)

// Accumulator holds the host buffers of the ordered sum of K micro-batches' gradients of n
// values: one per micro-batch this rank computes, and the sum.
type Accumulator struct {
	reducer *mpi.Reducer
	held    [][]float32
	sum     []float32
}

// New prepares the sum of K micro-batches' gradients of n values over c's ranks (nil: one
// process).
func New(c *mpi.Comm, n, K int) (*Accumulator, error) {
	r, err := mpi.NewReducer(c, n, K)
	if err != nil {
		return nil, err
	}
	_, cnt := r.Held()
	a := &Accumulator{reducer: r, sum: make([]float32, n)}
	for range cnt {
		a.held = append(a.held, make([]float32, n))
	}
	return a, nil
}

// Held returns the micro-batches this rank computes: first, ..., first+n-1.
func (a *Accumulator) Held() (first, n int) { return a.reducer.Held() }

// Slot is where the gradient of this rank's i-th micro-batch (micro-batch first+i) goes; nil
// for a nil accumulator.
func (a *Accumulator) Slot(i int) []float32 {
	if a == nil {
		return nil
	}
	return a.held[i]
}

// ReduceInto adds every rank's micro-batch gradients in order and uploads the sum to dst,
// adding what moved to stats; a nil accumulator does nothing.
func (a *Accumulator) ReduceInto(dst *tensor.Flat, stats *mpi.ReduceStats) error {
	if a == nil {
		return nil
	}
	before := a.reducer.Stats()
	if err := a.reducer.Sum(a.sum, a.held); err != nil {
		return err
	}
	after := a.reducer.Stats()
	stats.BytesSent += after.BytesSent - before.BytesSent
	stats.Seconds += after.Seconds - before.Seconds
	return dst.Upload(a.sum)
}

// Start begins the sum, scaled by scale, of the values [lo, hi) once this rank's gradients hold
// them, to run beside the rest of the backward pass.
func (a *Accumulator) Start(lo, hi int, scale float32) error {
	return a.reducer.Start(a.sum, a.held, lo, hi, scale)
}

// Wait waits for every range Start began.
func (a *Accumulator) Wait() error { return a.reducer.Wait() }

// UploadSum uploads the sum to dst.
func (a *Accumulator) UploadSum(dst *tensor.Flat) error { return dst.Upload(a.sum) }

// Stats returns what the sums have sent and the time they took so far.
func (a *Accumulator) Stats() mpi.ReduceStats { return a.reducer.Stats() }
