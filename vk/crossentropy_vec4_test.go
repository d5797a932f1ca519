package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestCrossEntropyVec4MatchesScalar runs the forward and the fused loss on logits and outputs
// starting on a vec4 (the _vec4 kernels) and one element off (the scalar ones), with V a
// multiple of 4 and not, one window and chunked, and wants the same bits in losses and
// outputs (padding included).
func TestCrossEntropyVec4MatchesScalar(t *testing.T) {
	for name, vb := range backends(t) {
		for _, s := range []struct{ N, V, Vp int }{{3, 40, 40}, {5, 37, 40}, {4, 301, 304}} {
			r := rand.New(rand.NewPCG(uint64(s.V), 3))
			logits := randVec(r, s.N*s.Vp)
			for i := range logits {
				logits[i] *= 4
			}
			targets := backendtest.Tokens(r, s.N, s.V)
			for _, fused := range []bool{false, true} {
				op, kernel := "forward", "crossentropy_forward_vec4"
				if fused {
					op, kernel = "fused", "crossentropy_fused_vec4"
				}
				run := func(off int) (map[string]int, []float32, []float32) {
					lg := backendtest.OnBackend(t, vb, logits, off)
					out := backendtest.OnBackend(t, vb, make([]float32, s.N*s.Vp), off)
					losses := backendtest.OnBackend(t, vb, make([]float32, s.N), 0)
					tg := backendtest.PlaceInt32(t, vb, targets)
					calls := mmRunKernels(t, vb, func() {
						if fused {
							vb.CrossEntropyFused(losses, out, lg, tg, s.N, s.V, s.Vp, 0.25)
						} else {
							vb.CrossEntropyForward(losses, out, lg, tg, s.N, s.V, s.Vp)
						}
					})
					return calls, download(t, vb, losses), download(t, vb, out)
				}
				what := fmt.Sprintf("%s %s N=%d V=%d Vp=%d", name, op, s.N, s.V, s.Vp)
				wideCalls, wl, wo := run(4)
				narrowCalls, nl, no := run(1)
				if wideCalls[kernel] == 0 || narrowCalls[kernel] != 0 {
					t.Fatalf("%s: %s ran %d times on aligned rows and %d on unaligned ones, want some and none", what, kernel, wideCalls[kernel], narrowCalls[kernel])
				}
				for _, c := range []struct {
					what       string
					wide, narr []float32
				}{{"losses", wl, nl}, {"out", wo, no}} {
					for i := range c.wide {
						if math.Float32bits(c.wide[i]) != math.Float32bits(c.narr[i]) {
							t.Fatalf("%s: %s[%d] = %g through vec4s, %g one float at a time", what, c.what, i, c.wide[i], c.narr[i])
						}
					}
				}
			}
		}
	}
}
