package objective

// ClipStats tallies learned tokens' probability ratios against a clip range [lo, hi], by the
// sign of each token's advantage: the clip diagnostics of GRPO and of a PPO epoch.
type ClipStats struct {
	lo, hi                           float64
	ratios                           []float64
	sum, pos, neg                    float64
	nPos, nNeg, nLow, nHigh, nActive int
}

// NewClipStats tallies ratios against [lo, hi].
func NewClipStats(lo, hi float64) ClipStats { return ClipStats{lo: lo, hi: hi} }

// Add counts one learned token's ratio r under advantage A.
func (s *ClipStats) Add(r, A float64) {
	s.ratios = append(s.ratios, r)
	s.sum += r
	if r >= s.lo && r <= s.hi {
		s.nActive++
	}
	if r < s.lo && A < 0 {
		s.nLow++
	}
	if r > s.hi && A > 0 {
		s.nHigh++
	}
	if A > 0 {
		s.pos += r
		s.nPos++
	} else if A < 0 {
		s.neg += r
		s.nNeg++
	}
}

// Count is the number of ratios added.
func (s *ClipStats) Count() int { return len(s.ratios) }

// ClipSummary are the clip diagnostics: fractions of the learned tokens (0 without any) and
// ratio means and quantiles (1 without any).
type ClipSummary struct {
	LowMean, HighMean, RegionMean float64 // ratio < lo and A < 0; ratio > hi and A > 0; either
	Active, Clipped               float64 // ratio inside the clip range; outside it
	// MeanPositiveAdv and MeanNegativeAdv are the mean ratios where A > 0 and where A < 0.
	MeanPositiveAdv, MeanNegativeAdv float64
	P10, P50, P90                    float64
}

// Summary returns the diagnostics, the fractions over n learned tokens.
func (s *ClipStats) Summary(n int) ClipSummary {
	frac := func(k int) float64 {
		if n == 0 {
			return 0
		}
		return float64(k) / float64(n)
	}
	c := ClipSummary{LowMean: frac(s.nLow), HighMean: frac(s.nHigh), RegionMean: frac(s.nLow + s.nHigh), Active: frac(s.nActive),
		MeanPositiveAdv: meanOr1(s.pos, s.nPos), MeanNegativeAdv: meanOr1(s.neg, s.nNeg), P10: 1, P50: 1, P90: 1}
	if n > 0 {
		c.Clipped = 1 - c.Active
	}
	if len(s.ratios) > 0 {
		c.P10, c.P50, c.P90 = Quantile(s.ratios, 0.1), Quantile(s.ratios, 0.5), Quantile(s.ratios, 0.9)
	}
	return c
}

// meanOr1 is sum/k, or 1 (a ratio's neutral value) when k is 0.
func meanOr1(sum float64, k int) float64 {
	if k == 0 {
		return 1
	}
	return sum / float64(k)
}
