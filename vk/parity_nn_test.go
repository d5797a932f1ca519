package vk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// The fused neural-network ops against the CPU reference run as backendtest's cases (views
// among sentinels, repeated, chunked and at other row widths); the tests here are Vulkan's
// own: the KV-cache decode, tables beyond one storage window, the saved attention state.
// Tensors they place sit in views among sentinels (backendtest.PlaceGuarded), as
// backendtest's do.

// TestNNParityWithCPU runs backendtest's fused-op cases on Vulkan against the CPU backend.
func TestNNParityWithCPU(t *testing.T) { runNNCases(t, backendtest.NNCases()) }

// runNNCases runs cases through backendtest on Vulkan: with the device's limits (twice, for
// bitwise repeatability), with a storage window of a few rows and 3 workgroups, which forces
// the chunking and the grid-stride loops, and with the row-reduction kernels at the
// workgroup widths of other devices' subgroups. Attention's saved state is checked against
// the log-sum-exp.
func runNNCases(t *testing.T, cases []backendtest.Case) {
	d := device(t)
	probe := NewBackendOn(d)
	wg := probe.wg
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	opts := backendtest.Options{Variants: []backendtest.Variant{tinyLimits(d), rowWidth(d, 32), rowWidth(d, wg)}}
	backendtest.RunCases(t, newVulkan(d), withSavedAttention(cases), opts)
}

// withSavedAttention adds to the attention cases a check of the state the Vulkan forward
// saves: each query's log-sum-exp.
func withSavedAttention(cases []backendtest.Case) []backendtest.Case {
	out := slices.Clone(cases)
	for i, c := range out {
		if !strings.HasPrefix(c.Name, "Attention/") {
			continue
		}
		lse := lseMatches(c.F["qkv"], c.Dims["B"], c.Dims["T"], c.Dims["C"], c.Dims["NH"])
		post := c.Post
		out[i].Keep = append(slices.Clone(c.Keep), "att")
		out[i].Post = func(t *testing.T, got map[string][]float32) {
			if post != nil {
				post(t, got)
			}
			lse(t, got)
		}
	}
	return out
}

// TestAttentionDecodeMatchesForward decodes a sequence in steps of several sizes through the
// KV cache: each step's output must equal AttentionForward over the whole sequence bit for
// bit (the same kernel over the same keys), the caches must hold exactly the keys and values
// written so far, and the outputs must agree with the CPU backend's decode. Both kinds of
// kernels run.
func TestAttentionDecodeMatchesForward(t *testing.T) {
	d := device(t)
	// Steps of several queries, single queries, and (at T=37) blocks and key tiles crossed
	// mid-step, with head sizes 4 and 64.
	for _, s := range []struct {
		B, T, C, NH, maxT int
		steps             []int
	}{{2, 9, 12, 3, 11, []int{4, 1, 3, 1}}, {2, 37, 128, 2, 40, []int{20, 1, 15, 1}}} {
		for _, kind := range attnKinds {
			for _, limits := range []string{"device", "chunked"} {
				t.Run(fmt.Sprintf("%s/T=%d,C=%d,NH=%d/%s", kind, s.T, s.C, s.NH, limits), func(t *testing.T) {
					forceAttention(t, kind)
					decodeMatchesForward(t, d, s.B, s.T, s.C, s.NH, s.maxT, s.steps, limits == "chunked")
				})
			}
		}
	}
}

func decodeMatchesForward(t *testing.T, d *Device, B, T, C, NH, maxT int, steps []int, chunked bool) {
	r := rand.New(rand.NewPCG(3, 4))
	qkv := backendtest.Normals(r, B*T*3*C, 1, 0)
	vb := NewBackendOn(d)
	defer vb.Close()
	if chunked {
		vb.maxGroups, vb.maxChunk = 3, max(NH*T*T, T*3*C, maxT*C) // one sequence per chunk
	}
	cb := cpu.New()
	defer cb.Close()
	full, _ := backendtest.PlaceGuarded(t, vb, qkv)
	out, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*T*C))
	att, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*NH*T*T))
	vb.AttentionForward(out, att, full, B, T, C, NH)
	want := download(t, vb, out)

	sentinel := make([]float32, B*maxT*C)
	for i := range sentinel {
		sentinel[i] = backendtest.Sentinel
	}
	kc, _ := backendtest.PlaceGuarded(t, vb, sentinel)
	vc, _ := backendtest.PlaceGuarded(t, vb, sentinel)
	ckc, _ := tensor.FromSlice(cb, sentinel, len(sentinel))
	cvc, _ := tensor.FromSlice(cb, sentinel, len(sentinel))
	pos := 0
	for _, Tq := range steps {
		step := make([]float32, B*Tq*3*C)
		for b := 0; b < B; b++ {
			copy(step[b*Tq*3*C:(b+1)*Tq*3*C], qkv[(b*T+pos)*3*C:(b*T+pos+Tq)*3*C])
		}
		sq, _ := backendtest.PlaceGuarded(t, vb, step)
		so, _ := backendtest.PlaceGuarded(t, vb, make([]float32, B*Tq*C))
		vb.AttentionDecode(so, kc, vc, sq, B, Tq, pos, maxT, C, NH)
		got := download(t, vb, so)

		cq, _ := tensor.FromSlice(cb, step, len(step))
		co, _ := tensor.New(cb, tensor.Float32, B*Tq*C)
		cb.AttentionDecode(co, ckc, cvc, cq, B, Tq, pos, maxT, C, NH)
		cgot, _ := tensor.ToHost(co)
		what := fmt.Sprintf("decode of positions %d..%d", pos, pos+Tq-1)
		backendtest.Compare(t, what+" against the CPU", backendtest.Check{Atol: 2e-6, Rtol: 1e-5}, got, cgot)
		for b := 0; b < B; b++ {
			backendtest.Compare(t, fmt.Sprintf("%s, sequence %d, against the forward", what, b), backendtest.Check{},
				got[b*Tq*C:(b+1)*Tq*C], want[(b*T+pos)*C:(b*T+pos+Tq)*C])
		}
		pos += Tq
	}
	for _, c := range []struct {
		name string
		v, c *tensor.Tensor
	}{{"kcache", kc, ckc}, {"vcache", vc, cvc}} {
		cwant, _ := tensor.ToHost(c.c)
		backendtest.Compare(t, c.name, backendtest.Check{}, download(t, vb, c.v), cwant) // copies, sentinels past T
	}
}

// TestEncoderBeyondStorageWindow runs the embedding on a table larger than the device's
// maxStorageBufferRange (GPT-2's wte is 154 MB, lavapipe's window 128 MiB), with tokens on both
// sides of the window boundary.
func TestEncoderBeyondStorageWindow(t *testing.T) {
	d := device(t)
	vb := NewBackendOn(d)
	defer vb.Close()
	const C, T = 64, 6
	V := vb.maxChunk/C + 40
	wte, err := tensor.New(vb, tensor.Float32, V, C)
	if err != nil {
		t.Skipf("no room for a %d-element table: %v", V*C, err)
	}
	defer vb.Free(wte.Storage)
	dwte, err := tensor.New(vb, tensor.Float32, V, C)
	if err != nil {
		t.Skipf("no room for a %d-element table: %v", V*C, err)
	}
	defer vb.Free(dwte.Storage)
	r := rand.New(rand.NewPCG(5, 6))
	tokens := []int32{0, int32(V - 1), int32(V - 30), 3, int32(V - 1), int32(V - 41)}
	rows := map[int32][]float32{}
	for _, tok := range tokens {
		if rows[tok] == nil {
			rows[tok] = backendtest.Normals(r, C, 1, 0)
			if err := vb.Upload(wte.View(int(tok)*C, C), rows[tok]); err != nil {
				t.Fatal(err)
			}
		}
	}
	wpe := backendtest.Normals(r, T*C, 1, 0)
	dout := backendtest.Normals(r, T*C, 1, 0)
	tv := backendtest.PlaceInt32(t, vb, tokens)
	pv, _ := backendtest.PlaceGuarded(t, vb, wpe)
	ov, _ := backendtest.PlaceGuarded(t, vb, make([]float32, T*C))
	dov, _ := backendtest.PlaceGuarded(t, vb, dout)
	dpv, _ := backendtest.PlaceGuarded(t, vb, make([]float32, T*C))
	vb.EncoderForward(ov, tv, wte, pv, 1, T, C)
	got := download(t, vb, ov)
	for p, tok := range tokens {
		for c := 0; c < C; c++ {
			if w := rows[tok][c] + wpe[p*C+c]; got[p*C+c] != w {
				t.Fatalf("out[%d, %d] (token %d) = %g, want %g", p, c, tok, got[p*C+c], w)
			}
		}
	}
	vb.EncoderBackward(dwte, dpv, dov, tv, 1, T, C)
	for _, tok := range []int32{0, 3, int32(V - 41), int32(V - 40), int32(V - 30), int32(V - 2), int32(V - 1)} {
		want := make([]float32, C)
		for p, pt := range tokens {
			if pt == tok {
				for c := range want {
					want[c] += dout[p*C+c]
				}
			}
		}
		backendtest.Compare(t, fmt.Sprintf("dwte row %d", tok), backendtest.Check{}, download(t, vb, dwte.View(int(tok)*C, C)), want)
	}
}

// lseMatches checks the saved state of the Vulkan forward: the log-sum-exp of each query's
// scaled scores, computed here in float64.
func lseMatches(qkv []float32, B, T, C, NH int) func(t *testing.T, got map[string][]float32) {
	return func(t *testing.T, got map[string][]float32) {
		t.Helper()
		hs := C / NH
		scale := float64(attnScale(hs))
		want := make([]float32, B*NH*T)
		for b := range B {
			for h := range NH {
				for tq := range T {
					q := qkv[(b*T+tq)*3*C+h*hs:]
					scores := make([]float64, tq+1)
					m := math.Inf(-1)
					for tk := range scores {
						k := qkv[(b*T+tk)*3*C+C+h*hs:]
						for i := range hs {
							scores[tk] += float64(q[i]) * float64(k[i])
						}
						scores[tk] *= scale
						m = max(m, scores[tk])
					}
					sum := 0.0
					for _, s := range scores {
						sum += math.Exp(s - m)
					}
					want[(b*NH+h)*T+tq] = float32(m + math.Log(sum))
				}
			}
		}
		backendtest.Compare(t, "att (log-sum-exp)", backendtest.Check{Atol: 1e-5, Rtol: 1e-5}, got["att"][:B*NH*T], want)
	}
}

// A head larger than the kernels hold is a clear error, not a wrong answer.
func TestAttentionHeadTooLarge(t *testing.T) {
	err := attentionForwardError(t, device(t), 1, 3, 300, 2)
	if err == nil || !strings.Contains(err.Error(), "head size 150") || !strings.Contains(err.Error(), "AttentionForward") {
		t.Fatalf("AttentionForward with 150-wide heads: error %v, want one naming the head size", err)
	}
}
