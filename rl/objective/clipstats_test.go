package objective

import (
	"math"
	"testing"
)

func TestClipStatsSummary(t *testing.T) {
	s := NewClipStats(0.8, 1.2)
	for _, tok := range []struct{ r, A float64 }{
		{1, 1},     // inside, positive
		{0.5, -1},  // below under a negative advantage: clipped low
		{1.5, 2},   // above under a positive advantage: clipped high
		{1.125, 0}, // inside, no advantage
		{0.75, 1},  // below, but a positive advantage is not held back there
	} {
		s.Add(tok.r, tok.A)
	}
	got := s.Summary(s.Count())
	want := ClipSummary{LowMean: 0.2, HighMean: 0.2, RegionMean: 0.4, Active: 0.4, Clipped: 0.6,
		MeanPositiveAdv: (1 + 1.5 + 0.75) / 3, MeanNegativeAdv: 0.5,
		P10: 0.5 + 0.4*0.25, P50: 1, P90: 1.125 + 0.6*0.375}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"low", got.LowMean, want.LowMean}, {"high", got.HighMean, want.HighMean}, {"region", got.RegionMean, want.RegionMean},
		{"active", got.Active, want.Active}, {"clipped", got.Clipped, want.Clipped},
		{"mean A>0", got.MeanPositiveAdv, want.MeanPositiveAdv}, {"mean A<0", got.MeanNegativeAdv, want.MeanNegativeAdv},
		{"p10", got.P10, want.P10}, {"p50", got.P50, want.P50}, {"p90", got.P90, want.P90},
	} {
		if math.Abs(c.got-c.want) > 1e-15 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestClipStatsWithoutTokens(t *testing.T) {
	s := NewClipStats(0.8, 1.2)
	want := ClipSummary{MeanPositiveAdv: 1, MeanNegativeAdv: 1, P10: 1, P50: 1, P90: 1}
	if got := s.Summary(0); got != want {
		t.Errorf("Summary(0) = %+v, want %+v", got, want)
	}
}
