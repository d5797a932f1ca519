package rl

import "fmt"

// updateTally sums what a step's updates report, for the step's metrics.
type updateTally struct {
	sum         map[string]float64 // loss diagnostics, summed over the computed updates
	gradNormSum float64            // over the applied updates
	computed    int                // updates whose loss was computed
	applied     int                // updates applied to the model
	overflows   []string           // why updates were skipped under loss scaling
	mismatches  int                // recomputed log-probs that differed
}

func newUpdateTally() *updateTally { return &updateTally{sum: map[string]float64{}} }

// computedOne records an update's loss, its diagnostics and its recompute mismatches.
func (u *updateTally) computedOne(up *updateResult, diagnostics map[string]float64, loss float64) {
	u.mismatches += up.recomputeMismatch
	u.computed++
	meanInto(u.sum, diagnostics)
	u.sum["loss"] += loss
}

// appliedOne records an update that went ahead: its gradient norm, or, when its gradient
// overflowed under loss scaling, that it was skipped.
func (u *updateTally) appliedOne(up *updateResult) {
	if up.overflow != "" {
		u.overflows = append(u.overflows, up.overflow)
		return
	}
	u.applied++
	u.gradNormSum += up.gradNorm
}

// lossScaleInto adds the loss scale after the step and the updates its overflows skipped to
// m, and a warning for each skip to rep (nothing without a scaler).
func (c *rolloutTrainer) lossScaleInto(m map[string]float64, rep *StepReport, u *updateTally) {
	if c.scaler == nil {
		return
	}
	m["loss_scale"] = float64(c.scaler.Scale)
	m["updates_skipped_overflow"] = float64(len(u.overflows))
	for _, o := range u.overflows {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("step %d: %s", c.step+1, o))
	}
}

// meansInto stores the diagnostics' means over the computed updates in m.
func (u *updateTally) meansInto(m map[string]float64) {
	for k, v := range u.sum {
		m[k] = v / float64(u.computed)
	}
}
