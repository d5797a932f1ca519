package rl

import (
	"fmt"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/nn/train"
	"github.com/vkgrad/vkgrad/rl/objective"
)

// tokenGrads are a loss's gradients with respect to each token's log-prob, entropy and value
// (host copies; not the parameters' Grads); nil fields contribute nothing.
type tokenGrads struct {
	Logp, Entropy, Values [][]float64
	Proceed               bool
}

// lossFunc turns a forward pass's outputs into the loss's per-token gradients.
type lossFunc func(cur *seqOut) (*tokenGrads, error)

// updateSpec says what one optimizer update trains: the policy (policyGrad) and the value head
// vh (when set); index numbers the update within the step (it keys the value head's dropout).
type updateSpec struct {
	vh         *ValueHead
	policyGrad bool
	index      int
}

// updateResult is what one update saw and did.
type updateResult struct {
	cur *seqOut     // the outputs the loss saw
	g   *tokenGrads // the loss's gradients; the update was applied when g.Proceed
	// gradNorm is the policy's gradient norm before clipping (the value head's when only it
	// trains); 0 when the update was not applied.
	gradNorm float64
	// recomputeMismatch counts log-probs that differ when a micro-batch is recomputed with the
	// tape (0 on a deterministic backend).
	recomputeMismatch int
	// overflow says why the update was skipped when its gradient overflowed under loss
	// scaling; "" otherwise.
	overflow string
}

// update runs one optimizer update on sb: the forward passes, fn's gradients of the loss, the
// backward passes and AdamW. One micro-batch is recorded as it is evaluated; several are
// evaluated without the tape first (the loss needs the whole batch), then each is recomputed
// with it; spread over ranks, each rank recomputes its own.
func (c *rolloutTrainer) update(sb *seqBatch, spec updateSpec, fn lossFunc) (*updateResult, error) {
	var res *updateResult
	var err error
	done := c.timed(PhaseUpdate)
	switch {
	case c.cfg.Spread:
		res, err = c.gradientsSpread(sb, spec, fn)
	case len(sb.mbs) == 1:
		res, err = c.gradientsWhole(sb, spec, fn)
	default:
		res, err = c.gradientsMicro(sb, spec, fn)
	}
	done()
	if err != nil || !res.g.Proceed {
		return res, err
	}
	defer c.timed(PhaseOptimizer)()
	res.gradNorm, res.overflow, err = c.optimizerStep(spec)
	return res, err
}

// dropoutSeed keys the value head's dropout masks of an update's micro-batches.
func (c *rolloutTrainer) dropoutSeed(spec updateSpec) func(mb int) uint64 {
	return func(mb int) uint64 { return c.maskSeed(spec, mb) }
}

// maskSeed keys the value head's dropout mask of micro-batch mb of an update.
func (c *rolloutTrainer) maskSeed(spec updateSpec, mb int) uint64 {
	base := c.cfg.Seed
	if spec.vh != nil {
		base = spec.vh.Config.Seed
	}
	return base*1_000_003 + uint64(c.step)*7919 + uint64(spec.index)*104729 + uint64(mb)
}

// forwardRecorded runs micro-batch b with the tape: the trunk only when the policy trains, the
// value head always.
func (c *rolloutTrainer) forwardRecorded(sb *seqBatch, b int, spec updateSpec) (logp, ent, values *autograd.Var, err error) {
	mtp := c.tape
	if !spec.policyGrad {
		mtp = nil
	}
	v := valuePass{head: spec.vh, tape: c.tape, train: true, seed: c.maskSeed(spec, b), detach: !spec.policyGrad}
	logp, ent, values, err = forwardMB(c.pol, mtp, &sb.mbs[b], c.cfg.Rollout.Sampling.Temperature, v)
	if err != nil {
		c.tape.Reset()
	}
	return logp, ent, values, err
}

// backwardMB hands micro-batch mb's share of g, times the loss scale, to the recorded outputs
// and back-propagates.
func (c *rolloutTrainer) backwardMB(sb *seqBatch, mb *microBatch, spec updateSpec, g *tokenGrads, logp, ent, values *autograd.Var) error {
	scale := lossScaleOf(c.scaler)
	if spec.policyGrad {
		c.pol.ZeroTrunkGrads()
		if err := sb.scatter(mb, g.Logp, scale, logp.Grad); err != nil {
			return err
		}
		if g.Entropy != nil {
			if err := sb.scatter(mb, g.Entropy, scale, ent.Grad); err != nil {
				return err
			}
		}
	}
	if spec.vh != nil && g.Values != nil {
		if err := sb.scatter(mb, g.Values, scale, values.Grad); err != nil {
			return err
		}
	}
	c.tape.Backward()
	return nil
}

// gradientsWhole records the single micro-batch's forward, evaluates the loss on it and, when
// the loss proceeds, back-propagates.
func (c *rolloutTrainer) gradientsWhole(sb *seqBatch, spec updateSpec, fn lossFunc) (*updateResult, error) {
	mb := &sb.mbs[0]
	logp, ent, values, err := c.forwardRecorded(sb, 0, spec)
	if err != nil {
		return nil, err
	}
	res := &updateResult{cur: newSeqOut(sb.N, sb.W, spec.vh != nil)}
	if err := sb.collect(mb, res.cur, logp, ent, values); err != nil {
		c.tape.Reset()
		return nil, err
	}
	if res.g, err = fn(res.cur); err != nil || !res.g.Proceed {
		c.tape.Reset()
		return res, err
	}
	if spec.policyGrad {
		c.pol.ZeroGrad()
	}
	return res, c.backwardMB(sb, mb, spec, res.g, logp, ent, values)
}

// gradientsMicro evaluates every micro-batch without the tape, the loss on the whole batch,
// then recomputes each micro-batch with the tape and back-propagates it, the gradients adding
// up on the device.
func (c *rolloutTrainer) gradientsMicro(sb *seqBatch, spec updateSpec, fn lossFunc) (*updateResult, error) {
	cur, err := sb.evalNoGrad(c.pol, c.cfg.Rollout.Sampling.Temperature, spec.vh, true, c.dropoutSeed(spec))
	if err != nil {
		return nil, err
	}
	res := &updateResult{cur: cur}
	if res.g, err = fn(cur); err != nil || !res.g.Proceed {
		return res, err
	}
	if spec.policyGrad {
		c.pol.ZeroGrad()
	}
	check := objective.Zeros(sb.N, sb.W)
	for b := range sb.mbs {
		mb := &sb.mbs[b]
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
	}
	return res, nil
}

// countMismatch adds to n the log-probs of mb's recorded forward that differ from the
// evaluation's (check is scratch space).
func (c *rolloutTrainer) countMismatch(sb *seqBatch, mb *microBatch, logp *autograd.Var, cur *seqOut, check [][]float64, n int) (int, error) {
	if err := sb.gather(mb, logp.Value, check); err != nil {
		c.tape.Reset()
		return n, err
	}
	for _, i := range mb.rows {
		for j := range check[i] {
			if check[i][j] != cur.Logp[i][j] {
				n++
			}
		}
	}
	return n, nil
}

// optimizerStep applies AdamW to what trains and returns the gradient norm (the policy's, or
// the value head's when only it trains). The gradients are unscaled first under loss scaling;
// a non-finite gradient never reaches the weights: under loss scaling it skips the update
// (overflow says why), otherwise it is an error.
func (c *rolloutTrainer) optimizerStep(spec updateSpec) (gradNorm float64, overflow string, err error) {
	m := c.pol
	lr := c.sched.At(c.step)
	scale := lossScaleOf(c.scaler)
	var policyNorm, valueNorm float32
	if spec.policyGrad {
		train.Unscale(m.Grads(), scale)
		c.opt.MeasureGrads(m.Grads())
		if policyNorm, err = c.opt.GradNorm(); err != nil {
			return 0, "", err
		}
	}
	if spec.vh != nil {
		train.Unscale(spec.vh.Grads, scale)
		if valueNorm, err = spec.vh.measure(); err != nil {
			return 0, "", err
		}
	}
	if bad := !finite32(policyNorm) || !finite32(valueNorm); bad {
		norm := policyNorm
		if finite32(norm) {
			norm = valueNorm
		}
		if overflow = lossScaleOverflow(c.scaler, norm); overflow != "" {
			if spec.vh != nil {
				spec.vh.ZeroGrad()
			}
			return 0, overflow, nil
		}
		what := "policy"
		if finite32(policyNorm) {
			what = "value head"
		}
		return 0, "", fmt.Errorf("step %d: the %s's gradient norm is %v; the %s was not updated (lower the learning rate, now %g, or check the model for NaN or Inf)", c.step+1, what, norm, what, lr)
	}
	if c.scaler != nil {
		c.scaler.Update(true)
	}
	if spec.policyGrad {
		c.opt.UpdateMeasured(m.Params(), m.Grads(), lr)
		gradNorm = float64(policyNorm)
	}
	if spec.vh != nil {
		vlr := lr
		if c.valueLR > 0 {
			vlr = float32(c.valueLR)
		}
		spec.vh.apply(vlr)
		if !spec.policyGrad {
			gradNorm = float64(valueNorm)
		}
	}
	return gradNorm, "", nil
}
