package rl

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vkgrad/vkgrad/internal/gradsum"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// A GRPO or PPO step spread over ranks: whole groups are sampled on the rank holding them, each
// row from its own stream keyed by (seed, step, group, row in group), and every rank receives
// the whole rollout. Each rank scores its own groups' completions (a slow verifier is called
// once per sample over all ranks) and every rank receives all the scores, bits unchanged. Every
// rank then computes the rewards' sums and the loss on the whole batch (the same arithmetic
// everywhere); the forward passes and gradients are split by micro-batch, and the gradients are
// added in micro-batch order (mpi.Reducer). Nothing depends on the number of ranks, so the
// parameters are the same bit for bit for any.

// SetComm spreads each step over the ranks of c (see the comment above) and sets
// TrainConfig.Spread; every rank must build the same trainer and prompt source. A nil c runs
// the same arithmetic in one process, as a trainer built with Spread does. The micro-batches
// (TrainConfig.MicroBatch rows each) must be at least as many as the ranks.
func (t *GRPOTrainer) SetComm(c *mpi.Comm) error {
	t.setComm(c)
	t.Config.Train.Spread = true
	return nil
}

// SetComm is GRPOTrainer.SetComm for PPO: the groups are a prompt's SamplesPerPrompt rows, and
// the value head's gradients are added in micro-batch order too.
func (t *PPOTrainer) SetComm(c *mpi.Comm) error {
	t.setComm(c)
	t.Config.Train.Spread = true
	return nil
}

func (c *rolloutTrainer) setComm(comm *mpi.Comm) {
	c.comm, c.accs = comm, nil
	c.cfg.Spread = true
}

// rankSize is this process's rank and the number of ranks (0 and 1 without MPI).
func (c *rolloutTrainer) rankSize() (rank, size int) {
	if c.comm == nil {
		return 0, 1
	}
	return c.comm.Rank(), c.comm.Size()
}

// generateSpread samples the rows (groups of per rows with one prompt each): each rank its
// own groups, then every rank assembles all of them.
func (c *rolloutTrainer) generateSpread(rows []Prompt, per int) (*Rollout, error) {
	ids, err := encodePrompts(c.policy, c.tok, rows)
	if err != nil {
		return nil, err
	}
	rank, size := c.rankSize()
	first, cnt := mpi.Held(rank, len(rows)/per, size)
	var mine []sampledRow
	for g := first; g < first+cnt; g++ {
		// A group at a time, so every rank decodes the same batches whatever the number of
		// ranks, and the tokens do not rest on the backend computing each row the same in any
		// batch.
		groups := slices.Repeat([]int{g}, per)
		streams := rowStreams(groups, c.cfg.Seed, uint64(c.step))
		got, err := decodeRows(c.policy, ids[g*per:(g+1)*per], groups, streams, c.cfg.Rollout, false, nil)
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
func (c *rolloutTrainer) shareRows(mine []sampledRow) ([]sampledRow, error) {
	if c.comm == nil {
		return mine, nil
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(mine); err != nil {
		return nil, err
	}
	parts, err := c.gather(buf.Bytes())
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

// scoreSpread scores the completions of this rank's groups (per rows each) and builds the
// whole batch's rewards from every rank's scores.
func (c *rolloutTrainer) scoreSpread(prompts, completions []string, metas []Meta, per int) (*RewardBatch, error) {
	gather := c.gather
	if c.comm == nil {
		gather = nil
	}
	return scoreOver(c.comm, gather, c.reward, prompts, completions, metas, per)
}

// scoreOver scores with r the completions of the groups of per rows that this rank of comm
// holds and builds the whole batch's rewards from every rank's scores, exchanged by gather
// (comm's GatherBytes, or nil with a nil comm: this process scores all).
func scoreOver(comm *mpi.Comm, gather func([]byte) ([][]byte, error), r *Combined, prompts, completions []string, metas []Meta, per int) (*RewardBatch, error) {
	rank, size := 0, 1
	if comm != nil {
		rank, size = comm.Rank(), comm.Size()
	}
	first, cnt := mpi.Held(rank, len(completions)/per, size)
	lo, hi := first*per, (first+cnt)*per
	mine, err := r.scoreTerms(prompts[lo:hi], completions[lo:hi], metas[lo:hi], lo)
	if gather != nil {
		mine, err = shareScores(gather, len(r.parts), mine, err)
	}
	if err != nil {
		return nil, err
	}
	if got := len(mine[0]); got != len(completions) {
		return nil, fmt.Errorf("the ranks scored %d of %d completions", got, len(completions))
	}
	return r.batchOf(mine)
}

// rankScores is what a rank sends of its rows' rewards: each term's scores, term after term,
// or the error that stopped its scoring, so that every rank fails with it.
type rankScores struct {
	Scores []float64
	Err    string
}

// shareScores returns each of the terms' scores of every rank's rows, in rank order (which is
// group order), given this rank's (or the error that stopped them).
func shareScores(gather func([]byte) ([][]byte, error), terms int, mine [][]float64, failed error) ([][]float64, error) {
	msg := rankScores{}
	if failed != nil {
		msg.Err = failed.Error()
	}
	for _, s := range mine {
		msg.Scores = append(msg.Scores, s...)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(msg); err != nil {
		return nil, err
	}
	parts, err := gather(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("sharing the rewards: %w", err)
	}
	if failed != nil {
		return nil, failed
	}
	all := make([][]float64, terms)
	for r, p := range parts {
		var got rankScores
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&got); err != nil {
			return nil, fmt.Errorf("the rewards rank %d sent: %w", r, err)
		}
		if got.Err != "" {
			return nil, fmt.Errorf("rank %d: %s", r, got.Err)
		}
		rows := len(got.Scores) / terms
		for k := range all {
			all[k] = append(all[k], got.Scores[k*rows:(k+1)*rows]...)
		}
	}
	return all, nil
}

// heldMBs are the micro-batches of sb this rank computes: first, ..., first+n-1.
func (c *rolloutTrainer) heldMBs(sb *seqBatch) (first, n int, err error) {
	rank, size := c.rankSize()
	if len(sb.mbs) < size {
		return 0, 0, fmt.Errorf("%d micro-batches of %d rows for %d ranks: lower micro_batch so that every rank has one", len(sb.mbs), len(sb.mbs[0].rows), size)
	}
	first, n = mpi.Held(rank, len(sb.mbs), size)
	return first, n, nil
}

// evalAll evaluates every micro-batch of sb without the tape (with vh's values when set, its
// dropout keyed by seed when train is set): spread, each rank its own and every rank receives
// all outputs.
func (c *rolloutTrainer) evalAll(sb *seqBatch, m *model, vh *ValueHead, train bool, seed func(mb int) uint64) (*seqOut, error) {
	temp := c.cfg.Rollout.Sampling.Temperature
	if !c.cfg.Spread {
		return sb.evalNoGrad(m, temp, vh, train, seed)
	}
	first, n, err := c.heldMBs(sb)
	if err != nil {
		return nil, err
	}
	out := newSeqOut(sb.N, sb.W, vh != nil)
	for b := first; b < first+n; b++ {
		var s uint64
		if seed != nil {
			s = seed(b)
		}
		logp, ent, values, err := forwardMB(m, nil, &sb.mbs[b], temp, valuePass{head: vh, train: train, seed: s})
		if err != nil {
			return nil, err
		}
		if err := sb.collect(&sb.mbs[b], out, logp, ent, values); err != nil {
			return nil, err
		}
	}
	return out, c.shareOut(sb, out, first, n)
}

// rowFields are the per-row outputs a rank shares: log-probs, entropies and, when present,
// values.
func rowFields(out *seqOut) [][][]float64 {
	f := [][][]float64{out.Logp, out.Entropy}
	if out.Values != nil {
		f = append(f, out.Values)
	}
	return f
}

// shareOut sends the rows of this rank's micro-batches [first, first+n) to every rank and
// fills out with every rank's.
func (c *rolloutTrainer) shareOut(sb *seqBatch, out *seqOut, first, n int) error {
	if c.comm == nil {
		return nil
	}
	fields := rowFields(out)
	var mine []float64
	for b := first; b < first+n; b++ {
		for _, i := range sb.mbs[b].rows {
			for _, f := range fields {
				mine = append(mine, f[i]...)
			}
		}
	}
	parts, err := c.gather(float64Bytes(mine))
	if err != nil {
		return fmt.Errorf("sharing log-probs: %w", err)
	}
	_, size := c.rankSize()
	for r := range size {
		got := bytesFloat64(parts[r])
		f, k := mpi.Held(r, len(sb.mbs), size)
		for b := f; b < f+k; b++ {
			for _, i := range sb.mbs[b].rows {
				for _, field := range fields {
					if len(got) < sb.W {
						return fmt.Errorf("rank %d sent too few outputs", r)
					}
					copy(field[i], got[:sb.W])
					got = got[sb.W:]
				}
			}
		}
	}
	return nil
}

// gradientsSpread evaluates the whole batch (spread), computes the loss on it, and
// back-propagates this rank's micro-batches one at a time; their gradients (the policy's and
// the value head's, for what trains) are added in micro-batch order over all ranks.
func (c *rolloutTrainer) gradientsSpread(sb *seqBatch, spec updateSpec, fn lossFunc) (*updateResult, error) {
	cur, err := c.evalAll(sb, c.pol, spec.vh, true, c.dropoutSeed(spec))
	if err != nil {
		return nil, err
	}
	res := &updateResult{cur: cur}
	if res.g, err = fn(cur); err != nil || !res.g.Proceed {
		return res, err
	}
	K := len(sb.mbs)
	var pol, val *gradsum.Accumulator
	if spec.policyGrad {
		if pol, err = c.accumFor(c.policy.NumParams(), K); err != nil {
			return nil, err
		}
	}
	if spec.vh != nil {
		if val, err = c.accumFor(spec.vh.Params.Len(), K); err != nil {
			return nil, err
		}
	}
	first, n, err := c.heldMBs(sb)
	if err != nil {
		return nil, err
	}
	check := objective.Zeros(sb.N, sb.W)
	for b := first; b < first+n; b++ {
		if res.recomputeMismatch, err = c.microBatchGradient(sb, b, spec, res, check, pol.Slot(b-first), val.Slot(b-first)); err != nil {
			return nil, err
		}
	}
	if err := pol.ReduceInto(c.pol.Grads(), &c.comms); err != nil {
		return nil, err
	}
	if spec.vh != nil {
		if err := val.ReduceInto(spec.vh.Grads, &c.comms); err != nil {
			return nil, err
		}
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

// microBatchGradient back-propagates micro-batch b from zeroed gradients and copies them to
// polDst and valDst (each nil when that part does not train); it returns res's mismatch count
// with b's added.
func (c *rolloutTrainer) microBatchGradient(sb *seqBatch, b int, spec updateSpec, res *updateResult, check [][]float64, polDst, valDst []float32) (int, error) {
	mb := &sb.mbs[b]
	if spec.policyGrad {
		c.pol.ZeroGrad()
	}
	if spec.vh != nil {
		spec.vh.ZeroGrad()
	}
	logp, ent, values, err := c.forwardRecorded(sb, b, spec)
	if err != nil {
		return 0, err
	}
	mm, err := c.countMismatch(sb, mb, logp, res.cur, check, res.recomputeMismatch)
	if err != nil {
		return 0, err
	}
	if err := c.backwardMB(sb, mb, spec, res.g, logp, ent, values); err != nil {
		return 0, err
	}
	if polDst != nil {
		if err := c.pol.Grads().Download(polDst); err != nil {
			return 0, err
		}
	}
	if valDst != nil {
		if err := spec.vh.Grads.Download(valDst); err != nil {
			return 0, err
		}
	}
	return mm, nil
}

// accumFor returns the buffers of the ordered sum of K micro-batches' gradients of n values,
// made once per (n, K).
func (c *rolloutTrainer) accumFor(n, K int) (*gradsum.Accumulator, error) {
	key := [2]int{n, K}
	if a, ok := c.accs[key]; ok {
		return a, nil
	}
	a, err := gradsum.New(c.comm, n, K)
	if err != nil {
		return nil, fmt.Errorf("%w (lower micro_batch)", err)
	}
	if c.accs == nil {
		c.accs = map[[2]int]*gradsum.Accumulator{}
	}
	c.accs[key] = a
	return a, nil
}

// gather is Comm.GatherBytes, counted in c.comms (a broadcast sends buf to every other rank).
func (c *rolloutTrainer) gather(buf []byte) ([][]byte, error) {
	start := time.Now()
	parts, err := c.comm.GatherBytes(buf)
	c.comms.Seconds += time.Since(start).Seconds()
	c.comms.BytesSent += int64(len(buf)) * int64(c.comm.Size()-1)
	return parts, err
}

// commMetrics adds the step's traffic to m under MPI (bytes this rank sent, seconds in MPI) and
// starts counting the next step's.
func (c *rolloutTrainer) commMetrics(m map[string]float64) {
	if c.comm != nil {
		m["comm_bytes"], m["comm_seconds"] = float64(c.comms.BytesSent), c.comms.Seconds
	}
	c.comms = mpi.ReduceStats{}
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

// CheckReplicas returns an error when the ranks' policy parameters differ (they must stay
// equal bit for bit); one process always passes.
func (c *rolloutTrainer) CheckReplicas() error {
	if c.comm == nil {
		return nil
	}
	p, err := paramsToHost(c.policy)
	if err != nil {
		return err
	}
	return c.comm.CheckSameFloat32s(fmt.Sprintf("policy parameters after step %d", c.step), p)
}
