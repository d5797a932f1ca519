package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/internal/gradsum"
	"github.com/vkgrad/vkgrad/mpi"
)

// sftAccum holds the buffers of supervised steps whose micro-batch gradients are added on the
// host in micro-batch order: several micro-batches, or several ranks.
type sftAccum struct {
	grads *gradsum.Accumulator
	nll   []float64 // each micro-batch's summed negative log-likelihood
}

// SetComm spreads each step's micro-batches (Config.MicroBatch examples each) over the ranks
// of c; their gradients are added in micro-batch order on every rank, so the parameters are
// the same bit for bit for any number of ranks (and equal to one process with the same
// micro-batches). Every rank must build the same trainer and prompt source.
func (t *SFTTrainer) SetComm(c *mpi.Comm) error {
	t.comm, t.acc = c, nil
	return nil
}

// microBatches is the number of micro-batches of a step.
func (t *SFTTrainer) microBatches() (K, rows int) {
	B := t.Config.Batch
	rows = B
	if t.Config.MicroBatch > 0 {
		rows = min(t.Config.MicroBatch, B)
	}
	return (B + rows - 1) / rows, rows
}

func (t *SFTTrainer) ensureAccum(K int) error {
	if t.acc != nil && len(t.acc.nll) == K {
		return nil
	}
	n := t.Model.NumParams()
	g, err := gradsum.New(t.comm, n, K)
	if err != nil {
		return fmt.Errorf("sft: %w (raise the batch or lower micro_batch)", err)
	}
	t.acc = &sftAccum{grads: g, nll: make([]float64, K)}
	return nil
}

// accumulateOrdered computes this rank's micro-batches' gradients one by one, adds every
// rank's in micro-batch order into the parameter gradients, and returns the batch's summed
// negative log-likelihood and what the gradients' reduction sent.
func (t *SFTTrainer) accumulateOrdered(inputs []int32, positions []int, targets []int32, B, T, count int) (float64, mpi.ReduceStats, error) {
	var sent mpi.ReduceStats
	K, rows := t.microBatches()
	if err := t.ensureAccum(K); err != nil {
		return 0, sent, err
	}
	a, m := t.acc, t.Model
	first, cnt := a.grads.Held()
	clear(a.nll)
	for k := first; k < first+cnt; k++ {
		m.ZeroGrad()
		nll, err := t.accumulate(inputs, positions, targets, k*rows, rows, B, T, count)
		if err != nil {
			return 0, sent, fmt.Errorf("micro-batch %d: %w", k, err)
		}
		if err := m.Grads().Download(a.grads.Slot(k - first)); err != nil {
			return 0, sent, err
		}
		a.nll[k] = nll
	}
	if err := a.grads.ReduceInto(m.Grads(), &sent); err != nil {
		return 0, sent, err
	}
	all := a.nll
	if t.comm != nil {
		var err error
		if all, err = t.comm.SumFloat64(a.nll); err != nil { // other ranks' entries are 0
			return 0, sent, err
		}
	}
	var total float64
	for _, v := range all {
		total += v
	}
	return total, sent, nil
}

// CheckReplicas returns an error when the ranks' parameters differ (they must stay equal bit
// for bit); one process always passes.
func (t *SFTTrainer) CheckReplicas() error {
	if t.comm == nil {
		return nil
	}
	p, err := paramsToHost(t.Model)
	if err != nil {
		return err
	}
	return t.comm.CheckSameFloat32s(fmt.Sprintf("parameters after step %d", t.Step), p)
}
