package rl

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/dist"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// A GRPO step spread over ranks: whole groups are sampled on the rank holding them, each
// group from its own stream keyed by (seed, step, group), and every rank receives the whole
// rollout. Every rank then scores all of it and computes the loss on the whole batch (the same
// arithmetic everywhere); the forward passes and gradients are split by micro-batch, and the
// gradients are added in micro-batch order (dist.Reducer). Nothing depends on the number of
// ranks, so the parameters are the same bit for bit for any.

// spreadAccum holds the buffers of the ordered gradient sum.
type spreadAccum struct {
	reducer *dist.Reducer
	held    [][]float32 // this rank's micro-batches' gradients
	sum     []float32
}

// SetComm spreads each step over the ranks of c (see the comment above) and sets
// TrainConfig.Spread; every rank must build the same trainer and prompt source. A nil c runs
// the same arithmetic in one process, as a trainer built with Spread does. The micro-batches
// (TrainConfig.MicroBatch rows each) must be at least as many as the ranks.
func (t *GRPOTrainer) SetComm(c *dist.Comm) error {
	t.comm, t.spread, t.acc = c, true, nil
	t.cfg.Spread, t.Config.Train.Spread = true, true
	return nil
}

// rankSize is this process's rank and the number of ranks (0 and 1 without MPI).
func (c *core) rankSize() (rank, size int) {
	if c.comm == nil {
		return 0, 1
	}
	return c.comm.Rank(), c.comm.Size()
}

// generateSpread samples the rows (groups of per rows with one prompt each): each rank its
// own groups, then every rank assembles all of them.
func (c *core) generateSpread(rows []Prompt, per int) (*Rollout, error) {
	ids, err := encodePrompts(c.policy, c.tok, rows)
	if err != nil {
		return nil, err
	}
	rank, size := c.rankSize()
	first, cnt := dist.Held(rank, len(rows)/per, size)
	var mine []sampledRow
	for g := first; g < first+cnt; g++ {
		r := rng.Keyed(c.cfg.Seed, uint64(c.step), uint64(g))
		got, err := decodeRows(c.policy, ids[g*per:(g+1)*per], c.cfg.Rollout, false, r)
		if err != nil {
			return nil, err
		}
		mine = append(mine, got...)
	}
	all, err := c.shareRows(mine)
	if err != nil {
		return nil, err
	}
	return assembleRollout(c.tok, rows, ids, all, c.cfg.Rollout)
}

// shareRows returns every rank's sampled rows, in rank order (which is group order).
func (c *core) shareRows(mine []sampledRow) ([]sampledRow, error) {
	if c.comm == nil {
		return mine, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(mine); err != nil {
		return nil, err
	}
	parts, err := c.comm.GatherBytes(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("sharing the rollout: %w", err)
	}
	var all []sampledRow
	for r, p := range parts {
		var rows []sampledRow
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&rows); err != nil {
			return nil, fmt.Errorf("the rollout rank %d sent: %w", r, err)
		}
		all = append(all, rows...)
	}
	return all, nil
}

// heldMBs are the micro-batches of sb this rank computes: first, ..., first+n-1.
func (c *core) heldMBs(sb *seqBatch) (first, n int, err error) {
	rank, size := c.rankSize()
	if len(sb.mbs) < size {
		return 0, 0, fmt.Errorf("%d micro-batches of %d rows for %d ranks: lower micro_batch so that every rank has one", len(sb.mbs), len(sb.mbs[0].rows), size)
	}
	first, n = dist.Held(rank, len(sb.mbs), size)
	return first, n, nil
}

// evalAll evaluates every micro-batch of sb without the tape: spread, each rank its own and
// every rank receives all outputs.
func (c *core) evalAll(sb *seqBatch, m *model) (*seqOut, error) {
	temp := c.cfg.Rollout.Sampling.Temperature
	if !c.spread {
		return sb.evalNoGrad(m, temp, nil, false, nil)
	}
	first, n, err := c.heldMBs(sb)
	if err != nil {
		return nil, err
	}
	out := newSeqOut(sb.N, sb.W, false)
	for b := first; b < first+n; b++ {
		logp, ent, _, err := forwardMB(m, nil, &sb.mbs[b], temp, nil, nil, false, 0, false)
		if err != nil {
			return nil, err
		}
		if err := sb.collect(&sb.mbs[b], out, logp, ent, nil); err != nil {
			return nil, err
		}
	}
	return out, c.shareOut(sb, out, first, n)
}

// shareOut sends the rows of this rank's micro-batches [first, first+n) to every rank and
// fills out with every rank's.
func (c *core) shareOut(sb *seqBatch, out *seqOut, first, n int) error {
	if c.comm == nil {
		return nil
	}
	var mine []float64
	for b := first; b < first+n; b++ {
		for _, i := range sb.mbs[b].rows {
			mine = append(mine, out.Logp[i]...)
			mine = append(mine, out.Entropy[i]...)
		}
	}
	parts, err := c.comm.GatherBytes(float64Bytes(mine))
	if err != nil {
		return fmt.Errorf("sharing log-probs: %w", err)
	}
	_, size := c.rankSize()
	for r := range size {
		got := bytesFloat64(parts[r])
		f, k := dist.Held(r, len(sb.mbs), size)
		for b := f; b < f+k; b++ {
			for _, i := range sb.mbs[b].rows {
				if len(got) < 2*sb.W {
					return fmt.Errorf("rank %d sent %d log-probs short", r, 2*sb.W-len(got))
				}
				copy(out.Logp[i], got[:sb.W])
				copy(out.Entropy[i], got[sb.W:2*sb.W])
				got = got[2*sb.W:]
			}
		}
	}
	return nil
}

// gradientsSpread evaluates the whole batch (spread), computes the loss on it, and
// back-propagates this rank's micro-batches one at a time; their gradients are added in
// micro-batch order over all ranks into the policy's gradient.
func (c *core) gradientsSpread(sb *seqBatch, spec updateSpec, fn lossFunc) (*updateResult, error) {
	if spec.vh != nil || !spec.policyGrad {
		return nil, fmt.Errorf("a value head does not train spread over ranks")
	}
	cur, err := c.evalAll(sb, c.pol)
	if err != nil {
		return nil, err
	}
	res := &updateResult{cur: cur}
	if res.g, err = fn(cur); err != nil || !res.g.Proceed {
		return res, err
	}
	if err := c.ensureSpreadAccum(len(sb.mbs)); err != nil {
		return nil, err
	}
	a, m := c.acc, c.pol
	first, n := a.reducer.Held()
	check := objective.Zeros(sb.N, sb.W)
	for b := first; b < first+n; b++ {
		mb := &sb.mbs[b]
		m.ZeroGrad()
		logp, ent, values, err := c.forwardRecorded(sb, b, spec)
		if err != nil {
			return nil, err
		}
		if res.recomputeMismatch, err = c.countMismatch(sb, mb, logp, cur, check, res.recomputeMismatch); err != nil {
			return nil, err
		}
		if err := c.backwardMB(sb, mb, spec, res.g, logp, ent, values); err != nil {
			return nil, err
		}
		if err := m.Grads().Download(a.held[b-first]); err != nil {
			return nil, err
		}
	}
	if err := a.reducer.Sum(a.sum, a.held); err != nil {
		return nil, err
	}
	if err := m.Grads().Upload(a.sum); err != nil {
		return nil, err
	}
	if c.comm != nil {
		mm := []int64{int64(res.recomputeMismatch)}
		if err := c.comm.SumInt64(mm); err != nil {
			return nil, err
		}
		res.recomputeMismatch = int(mm[0])
	}
	return res, nil
}

// ensureSpreadAccum prepares the ordered sum of K micro-batches' gradients.
func (c *core) ensureSpreadAccum(K int) error {
	if c.acc != nil && c.accK == K {
		return nil
	}
	n := c.policy.NumParams()
	r, err := dist.NewReducer(c.comm, n, K)
	if err != nil {
		return fmt.Errorf("%w (lower micro_batch)", err)
	}
	_, cnt := r.Held()
	a := &spreadAccum{reducer: r, sum: make([]float32, n)}
	for range cnt {
		a.held = append(a.held, make([]float32, n))
	}
	c.acc, c.accK = a, K
	return nil
}

func float64Bytes(xs []float64) []byte {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func bytesFloat64(b []byte) []float64 {
	xs := make([]float64, len(b)/8)
	for i := range xs {
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return xs
}
