package train

import (
	"fmt"
	"time"

	"github.com/vkgrad/vkgrad/internal/gradsum"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn/internal/tokenloss"
)

// A step of K micro-batches: each is forward and backward on its own, its gradient kept apart,
// and the K gradients are added in micro-batch order, then scaled by 1/K. Under MPI each rank
// computes the micro-batches it holds and mpi.Reducer does the ordered sum across ranks, so a
// run gives the same bits with any number of ranks, including one process without MPI. The
// sum of a range of the gradient starts during the backward pass of the rank's last
// micro-batch, as soon as that pass has finished the range (overlap.go).

// accum is the state of micro-batched steps.
type accum struct {
	comm   *mpi.Comm // nil: one process
	grads  *gradsum.Accumulator
	losses []float64 // per micro-batch mean loss, this rank's entries set
}

// SetComm makes the trainer one rank of a data-parallel job (before the first step). Every
// rank must build its trainer with the same model, data and config.
func (t *Trainer) SetComm(c *mpi.Comm) error {
	if t.Step != 0 && t.acc == nil {
		return fmt.Errorf("train: SetComm after training started")
	}
	t.acc = nil
	t.comm = c
	return t.ensureAccum()
}

// CommStats returns what the gradient reductions have sent and the time they took so far
// (zero in one process without micro-batches).
func (t *Trainer) CommStats() mpi.ReduceStats {
	if t.acc == nil {
		return mpi.ReduceStats{}
	}
	return t.acc.grads.Stats()
}

// microBatches is K, the micro-batches of a step.
func (c Config) microBatches() int { return max(1, c.MicroBatches) }

// ensureAccum prepares the buffers of micro-batched steps once.
func (t *Trainer) ensureAccum() error {
	if t.acc != nil {
		return nil
	}
	K, n := t.Config.microBatches(), t.Model.Params().Len()
	g, err := gradsum.New(t.comm, n, K)
	if err != nil {
		return err
	}
	t.acc = &accum{comm: t.comm, grads: g, losses: make([]float64, K)}
	return nil
}

// trainStepAccumulated is TrainStep over K micro-batches (and ranks).
func (t *Trainer) trainStepAccumulated() (StepStats, error) {
	start := time.Now()
	if err := t.ensureAccum(); err != nil {
		return StepStats{}, err
	}
	a, m := t.acc, t.Model
	params, grads := m.Params(), m.Grads()
	K, B, T := t.Config.microBatches(), t.Config.Batch, t.Config.Seq
	first, cnt := a.grads.Held()
	clear(a.losses)
	before := a.grads.Stats() // nothing is in flight between steps
	scale, err := t.applyLossScale()
	if err != nil {
		return StepStats{}, err
	}
	for k := range K {
		// Every rank reads every micro-batch, so the data stream does not depend on the rank
		// count; each keeps its own.
		x, y := t.Train.Next()
		if k < first || k >= first+cnt {
			continue
		}
		var reduce *overlap // the rank's last micro-batch starts the sum as its backward goes
		if k == first+cnt-1 {
			reduce = t.newOverlap(a.grads.Slot(k-first), unscaledMean(K, scale))
		}
		loss, err := t.microBatchGradient(x, y, B, T, a.grads.Slot(k-first), reduce)
		if err != nil {
			a.grads.Wait() // the ranges started before the error, which every rank starts
			return StepStats{}, fmt.Errorf("step %d, micro-batch %d: %w", t.Step+1, k, err)
		}
		a.losses[k] = loss
	}
	if err := a.grads.Wait(); err != nil {
		return StepStats{}, err
	}
	after := a.grads.Stats()
	if err := a.grads.UploadSum(grads); err != nil {
		return StepStats{}, err
	}
	lr := t.schedule.At(t.Step)
	t.Opt.MeasureGrads(grads)
	norm, err := t.Opt.GradNorm()
	if err != nil {
		return StepStats{}, err
	}
	loss, err := t.meanLoss()
	if err != nil {
		return StepStats{}, err
	}
	stats := StepStats{Step: t.Step + 1, Loss: loss, LR: lr, GradNorm: norm, Tokens: K * B * T,
		CommBytes: after.BytesSent - before.BytesSent, CommSeconds: after.Seconds - before.Seconds}
	// every rank sees the same loss and norm, so all decide alike
	return t.finishStep(stats, scale, params, grads, lr, start)
}

// microBatchGradient runs forward and backward on one micro-batch from zeroed gradients and
// copies the gradient into dst, range by range through reduce when it is set (the rank's last
// micro-batch); it returns the micro-batch's mean loss.
func (t *Trainer) microBatchGradient(x, y []int32, B, T int, dst []float32, reduce *overlap) (float64, error) {
	m := t.Model
	if reduce != nil && reduce.live {
		m.OnGradsFinal(reduce.finalRanges)
		defer m.OnGradsFinal(nil)
	}
	if err := m.ForwardCrossEntropy(t.tape, x, y, B, T); err != nil {
		t.tape.Reset()
		return 0, err
	}
	if err := backwardFromZero(m, t.tape); err != nil {
		return 0, err
	}
	if reduce != nil {
		if err := reduce.finish(); err != nil {
			return 0, err
		}
	} else if err := m.Grads().Download(dst); err != nil {
		return 0, err
	}
	losses := t.hostStats[:B*T]
	if err := m.Backend().Download(losses, m.Losses()); err != nil {
		return 0, err
	}
	return float64(tokenloss.Mean(losses)), nil
}

// meanLoss averages the micro-batches' mean losses, added in micro-batch order on every rank.
func (t *Trainer) meanLoss() (float32, error) {
	a := t.acc
	all := a.losses
	if a.comm != nil {
		var err error
		if all, err = a.comm.SumFloat64(a.losses); err != nil { // other ranks' entries are 0
			return 0, err
		}
	}
	var s float64
	for _, l := range all {
		s += l
	}
	return float32(s / float64(len(all))), nil
}

// CheckReplicas returns an error when the ranks' parameters differ (they must stay equal bit
// for bit); a single process always passes.
func (t *Trainer) CheckReplicas() error {
	if t.comm == nil {
		return nil
	}
	p, err := t.Model.Params().ToHost()
	if err != nil {
		return err
	}
	return t.comm.CheckSameFloat32s(fmt.Sprintf("parameters after step %d", t.Step), p)
}
