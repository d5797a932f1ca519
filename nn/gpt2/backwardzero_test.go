package gpt2_test

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/rng"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
)

// chunkedLossCfg's head is wide enough for ForwardCrossEntropy to take the chunked loss head
// at HeadChunkRows 4.
var chunkedLossCfg = gpt2.Config{NumLayers: 2, NumHeads: 3, Channels: 24, MaxSeqLen: 12, VocabSize: 250, PaddedVocabSize: 256}

// backwardGrads runs two training passes (forward, gradients, SGD step) on a fresh model and
// returns each pass's gradients. fromZero takes BackwardFromZero over gradients holding NaN;
// otherwise ZeroGrad and Backward. With OnGradsFinal set, every range reported must already
// be free of NaN.
func backwardGrads(t *testing.T, be tensor.Backend, cfg gpt2.Config, headRows int, recompute, fromZero bool) [][]float32 {
	t.Helper()
	m := gradModel(t, be, cfg, 5)
	m.HeadChunkRows, m.Recompute = headRows, recompute
	nan := float32(math.NaN())
	m.OnGradsFinal(func(ranges [][2]int) {
		g, err := m.GradsToHost()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ranges {
			for i := r[0]; i < r[0]+r[1]; i++ {
				if g[i] != g[i] {
					t.Fatalf("gradient [%d] reported final while still stale", i)
				}
			}
		}
	})
	const B, T = 2, 9
	var out [][]float32
	for pass := range 2 {
		r := rng.New(uint64(pass + 1))
		inputs, targets := make([]int32, B*T), make([]int32, B*T)
		for i := range inputs {
			inputs[i], targets[i] = int32(r.Intn(cfg.VocabSize)), int32(r.Intn(cfg.VocabSize))
		}
		tp := autograd.NewTape()
		if err := m.ForwardCrossEntropy(tp, inputs, targets, B, T); err != nil {
			t.Fatal(err)
		}
		var err error
		if fromZero {
			for _, p := range m.Grads.Parts() {
				be.Fill(p, nan)
			}
			err = m.BackwardFromZero(tp)
		} else {
			m.ZeroGrad()
			err = m.Backward(tp)
		}
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.GradsToHost()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
		params, err := m.ParamsToHost()
		if err != nil {
			t.Fatal(err)
		}
		for i := range params {
			params[i] -= 0.05 * g[i]
		}
		if err := m.SetParams(params); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestBackwardFromZeroMatchesZeroGrad checks that skipping the clearing pass gives the gradients
// of ZeroGrad and Backward bit for bit (up to the sign of a zero), over stale memory, with the
// whole and the chunked loss head, with and without recomputation.
func TestBackwardFromZeroMatchesZeroGrad(t *testing.T) {
	cases := []struct {
		name      string
		cfg       gpt2.Config
		headRows  int
		recompute bool
	}{
		{"whole", recomputeCfg, 0, false},
		{"recompute", recomputeCfg, 0, true},
		{"chunked", chunkedLossCfg, 4, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recomputeBackends(t, func(t *testing.T, be tensor.Backend) {
				want := backwardGrads(t, be, c.cfg, c.headRows, c.recompute, false)
				got := backwardGrads(t, be, c.cfg, c.headRows, c.recompute, true)
				for pass := range want {
					for i, w := range want[pass] {
						g := got[pass][i]
						if math.Float32bits(g) != math.Float32bits(w) && !(g == 0 && w == 0) {
							t.Fatalf("pass %d: gradient [%d] = %v, with ZeroGrad %v", pass, i, g, w)
						}
					}
				}
			})
		})
	}
}
