package bench

import (
	"math"
	"testing"
)

// stubRows is a decoder whose every row's logits favour token 0 by far.
type stubRows struct{ rowDecoder }

func (stubRows) StepRagged(rows []int, _ [][]int32) ([]float32, error) {
	out := make([]float32, 4*len(rows))
	for k := range rows {
		out[4*k] = 100
	}
	return out, nil
}

// The bench's decoder takes EOS out of every row's logits, so no completion ends early, and
// charges a step that prefills some rows and decodes others by its share of tokens.
func TestBenchDecoderMasksEOS(t *testing.T) {
	tally := &decodeTally{}
	d := &benchDecoder{rowDecoder: stubRows{}, eos: 0, cost: modelCost{body: 1, head: 1, layers: 1, qWidth: 1, kvWidth: 1}, t: tally, pos: make([]int, 2)}
	logits, err := d.StepRagged([]int{0, 1}, [][]int32{{5, 6, 7}, {8}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		if !math.IsInf(float64(logits[4*k]), -1) {
			t.Errorf("row %d: EOS logit %v, want -Inf", k, logits[4*k])
		}
	}
	if tally.prefillTokens != 3 || tally.decodeTokens != 1 || tally.decodeSteps != 1 || d.pos[0] != 3 || d.pos[1] != 1 {
		t.Errorf("tally %+v, positions %v: want 3 prompt tokens, 1 decoded in 1 step, positions [3 1]", tally, d.pos)
	}
}
