package vk

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestAdamWVec4MatchesScalar updates the same values through aligned views (adamw_vec4) and
// views one element off (adamw) and wants the same bits, on whole-device and tiny windows
// (chunks of 1000 elements); a length not a multiple of 4 runs adamw throughout.
func TestAdamWVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, n := range []int{8, 4096, 4098} {
			r := rand.New(rand.NewPCG(uint64(n), 7))
			hp, hg, hm := randVec(r, n), randVec(r, n), randVec(r, n)
			hv := make([]float32, n)
			for i := range hv {
				hv[i] = float32(r.Float64())
			}
			p := tensor.AdamWParams{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 3, MaxNorm: 1}
			run := func(off int) (map[string]int, [][]float32) {
				ts := []*tensor.Tensor{backendtest.OnBackend(t, vb, hp, off), backendtest.OnBackend(t, vb, hg, off), backendtest.OnBackend(t, vb, hm, off), backendtest.OnBackend(t, vb, hv, off)}
				p := p
				p.GradSumSq = backendtest.OnBackend(t, vb, []float32{float32(n)}, 1)
				calls := mmRunKernels(t, vb, func() { vb.AdamW(ts[0], ts[1], ts[2], ts[3], p) })
				return calls, [][]float32{download(t, vb, ts[0]), download(t, vb, ts[2]), download(t, vb, ts[3])}
			}
			wideCalls, wide := run(4)
			narrowCalls, narrow := run(1)
			someWide := n%4 == 0
			if (wideCalls["adamw_vec4"] > 0) != someWide || narrowCalls["adamw_vec4"] != 0 {
				t.Fatalf("%s n=%d: adamw_vec4 ran %d times on aligned views and %d on unaligned ones, want some (%v) and none", name, n, wideCalls["adamw_vec4"], narrowCalls["adamw_vec4"], someWide)
			}
			for j, what := range []string{"params", "m", "v"} {
				for i := range n {
					if math.Float32bits(wide[j][i]) != math.Float32bits(narrow[j][i]) {
						t.Fatalf("%s n=%d: %s[%d] = %g through vec4s, %g one at a time", name, n, what, i, wide[j][i], narrow[j][i])
					}
				}
			}
		}
	}
}
