package objective

import (
	"math"
	"strings"
	"testing"
)

// TestGroupAdvantagesOfCountedRows: rows left out of the statistics (failed episodes) get
// advantage 0 and change nothing for the others; a group with none counted has no signal.
// Worked by hand: group 1 counts {1, 0, 3}, mean 4/3, Bessel std sqrt(7/3).
func TestGroupAdvantagesOfCountedRows(t *testing.T) {
	rewards := []float64{1, 0, 5, 3, 2, 2, 9, 9}
	counted := []bool{true, true, false, true, false, false, false, false}
	adv, zero, err := GroupAdvantagesOf(rewards, counted, 4, ScaleGroup, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(7.0 / 3)
	want := []float64{(1 - 4.0/3) / s, (0 - 4.0/3) / s, 0, (3 - 4.0/3) / s, 0, 0, 0, 0}
	for i := range want {
		if math.Abs(adv[i]-want[i]) > 1e-12 {
			t.Errorf("advantage %d = %v, want %v", i, adv[i], want[i])
		}
	}
	if zero != 0.5 {
		t.Errorf("zero-deviation share %v, want 0.5", zero)
	}
	if _, _, err := GroupAdvantagesOf(rewards, counted[:3], 4, ScaleGroup, 0); err == nil {
		t.Error("a counted list of the wrong length was accepted")
	}
}

// TestGRPOLeftOutRowsTrainNothing: a row left out of the statistics with tokens on its loss
// mask is an error, not a silent zero.
func TestGRPOLeftOutRowsTrainNothing(t *testing.T) {
	in := GRPOInputs{Rewards: []float64{1, 0}, Logp: Zeros(2, 2), OldLogp: Zeros(2, 2), RefLogp: Zeros(2, 2),
		ResponseMask: [][]float64{{1, 1}, {1, 0}}, LossMask: [][]float64{{1, 1}, {1, 0}}, Counted: []bool{true, false}}
	cfg := DefaultGRPOConfig()
	cfg.GroupSize = 2
	if _, err := GRPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "counted row 1") {
		t.Errorf("got %v", err)
	}
}

// TestPPOTurnRewards: with turn rewards, PPO puts each on its token (less the KL penalty on
// every response token), passes over the gaps of the response mask with GAEOverTurns, and
// refuses a reward on a token outside the mask.
func TestPPOTurnRewards(t *testing.T) {
	resp := [][]float64{{1, 1, 0, 0, 1, 1, 0}, {0, 0, 0, 0, 0, 0, 0}}
	turns := [][]float64{{0, 0.5, 0, 0, 0, 1, 0}, make([]float64, 7)}
	values := [][]float64{{0.1, 0.2, 9, 9, 0.3, 0.4, 9}, make([]float64, 7)}
	cfg := DefaultPPOConfig()
	cfg.Gamma, cfg.Lam, cfg.KLCoef, cfg.WhitenAdvantages, cfg.MissingEOSPenalty = 0.9, 0.8, 0, false, 0
	in := PPOInputs{Scores: []float64{1.5, 0}, HasEOS: []bool{true, true}, Logp: Zeros(2, 7), OldLogp: Zeros(2, 7),
		RefLogp: Zeros(2, 7), Values: values, OldValues: values, ResponseMask: resp, LossMask: resp, TurnRewards: turns}
	r, err := PPOLoss(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	// By hand, over the trained positions 0, 1, 4, 5 as one sequence:
	// d5 = 1 - 0.4, d4 = 0 + 0.9*0.4 - 0.3, d1 = 0.5 + 0.9*0.3 - 0.2, d0 = 0.9*0.2 - 0.1.
	d5, d4, d1, d0 := 0.6, 0.06, 0.57, 0.08
	a5 := d5
	a4 := d4 + 0.72*a5
	a1 := d1 + 0.72*a4
	a0 := d0 + 0.72*a1
	want := []float64{a0, a1, 0, 0, a4, a5, 0}
	for k, w := range want {
		if math.Abs(r.AdvantagesRaw[0][k]-w) > 1e-12 {
			t.Errorf("advantage at %d = %v, want %v", k, r.AdvantagesRaw[0][k], w)
		}
	}
	in.TurnRewards = [][]float64{{0, 0, 0.5, 0, 0, 0, 0}, make([]float64, 7)}
	if _, err := PPOLoss(cfg, in); err == nil || !strings.Contains(err.Error(), "not a response token") {
		t.Errorf("a reward off the mask: %v", err)
	}
}
