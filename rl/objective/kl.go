package objective

import (
	"fmt"
	"math"
)

// KLEstimator names a per-token estimator of KL(policy || reference) from the log-probs of the
// sampled token (Schulman's k1, k2, k3). With d = logp - ref_logp:
//
//	k1 = d                      unbiased, can be negative per token
//	k2 = d^2 / 2                biased, always >= 0
//	k3 = exp(-d) + d - 1        unbiased and always >= 0 (TRL's GRPO default)
type KLEstimator string

// The KL estimators.
const (
	KLK1 KLEstimator = "k1"
	KLK2 KLEstimator = "k2"
	KLK3 KLEstimator = "k3"
)

// Validate reports an unknown estimator.
func (k KLEstimator) Validate() error {
	switch k {
	case KLK1, KLK2, KLK3:
		return nil
	}
	return fmt.Errorf("kl estimator %q: want k1, k2 or k3", string(k))
}

// KL returns the estimator's value for one token and its derivative with respect to logp.
func (k KLEstimator) KL(logp, refLogp float64) (kl, dLogp float64) {
	d := logp - refLogp
	switch k {
	case KLK1:
		return d, 1
	case KLK2:
		return 0.5 * d * d, d
	default:
		e := math.Exp(-d)
		return e + d - 1, 1 - e
	}
}
