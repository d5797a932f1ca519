package rl

// updateTally sums what a step's updates report, for the step's metrics.
type updateTally struct {
	sum         map[string]float64 // loss diagnostics, summed over the computed updates
	gradNormSum float64            // over the applied updates
	computed    int                // updates whose loss was computed
	applied     int                // updates applied to the model
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

// appliedOne records an applied update's gradient norm.
func (u *updateTally) appliedOne(up *updateResult) {
	u.applied++
	u.gradNormSum += up.gradNorm
}

// meansInto stores the diagnostics' means over the computed updates in m.
func (u *updateTally) meansInto(m map[string]float64) {
	for k, v := range u.sum {
		m[k] = v / float64(u.computed)
	}
}
