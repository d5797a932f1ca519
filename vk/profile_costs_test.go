package vk

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestEveryKernelReportsItsCost: every kernel that the NN, Llama and elementwise parity cases,
// a product and a KV-cache decode dispatch, with each kind of attention, reports its
// arithmetic or its memory traffic, so that --profile gives each row GFLOP/s or GB/s and a
// fraction of the device's peak. A kernel added without its cost fails here.
func TestEveryKernelReportsItsCost(t *testing.T) {
	d := device(t)
	if d.Info.TimestampBits == 0 {
		t.Skip("no timestamps on this device's compute queue")
	}
	seen := map[string]bool{}
	for _, kind := range []struct{ broadcast, rb bool }{{false, false}, {true, false}, {false, true}} {
		vb := NewBackendOn(d)
		vb.attnBroadcast, vb.attnRB = kind.broadcast, kind.rb
		vb.SetProfiling(true)
		for _, c := range append(backendtest.NNCases(), backendtest.LlamaCases()...) {
			c.RunOn(t, vb)
		}
		runElementwiseOps(t, vb)
		const B, T, C, NH, maxT = 2, 5, 8, 2, 8
		r := rand.New(rand.NewPCG(1, 2))
		kc, vc := backendtest.OnBackend(t, vb, make([]float32, B*maxT*C), 0), backendtest.OnBackend(t, vb, make([]float32, B*maxT*C), 0)
		out := backendtest.OnBackend(t, vb, make([]float32, B*T*C), 0)
		vb.AttentionDecode(out, kc, vc, backendtest.OnBackend(t, vb, randVec(r, B*T*3*C), 0), B, T, 0, maxT, C, NH)
		for _, row := range vb.KernelProfile() {
			name := row["kernel"].(string)
			seen[name] = true
			if row["gflops"] == nil && row["gbps"] == nil {
				t.Errorf("%s (%d calls) reports neither its arithmetic nor its memory traffic", name, row["calls"])
			}
		}
		if err := vb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names := slices.Sorted(maps.Keys(seen))
	t.Logf("%d kernels checked: %s", len(names), strings.Join(names, " "))
}

// runElementwiseOps runs each elementwise op, sum and product of the backend once, aligned
// (vec4 variants) and not.
func runElementwiseOps(t *testing.T, vb *Backend) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, off := range []int{0, 1} {
		const n = 64
		x, y := backendtest.OnBackend(t, vb, randVec(r, n), off), backendtest.OnBackend(t, vb, randVec(r, n), off)
		out := backendtest.OnBackend(t, vb, make([]float32, n), off)
		s := backendtest.OnBackend(t, vb, make([]float32, 1), 0)
		vb.Add(out, x, y)
		vb.Mul(out, x, y)
		vb.Axpy(out, 0.5, x)
		vb.Scale(out, 2)
		vb.Copy(out, x)
		vb.Fill(out, 1)
		vb.Sum(s, x)
		vb.SumSquares(s, x)
		vb.BiasBackward(backendtest.OnBackend(t, vb, make([]float32, 8), off), out, 8, 8)
		vb.BiasBackward(backendtest.OnBackend(t, vb, make([]float32, 4), off), backendtest.OnBackend(t, vb, randVec(r, 4096*4), off), 4096, 4)
		m, v := backendtest.OnBackend(t, vb, make([]float32, n), off), backendtest.OnBackend(t, vb, make([]float32, n), off)
		vb.AdamW(out, x, m, v, tensor.AdamWParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1})
	}
	t.Cleanup(func() { mmForceShader, mmForceSplits = "", 0 })
	for _, shader := range []string{"", "matmul_tiled"} {
		mmForceShader, mmForceSplits = shader, 2*len(shader)/len("matmul_tiled")
		const M, N, K = 8, 8, 2048
		a, bm, out := backendtest.OnBackend(t, vb, randVec(r, M*K), 0), backendtest.OnBackend(t, vb, randVec(r, K*N), 0), backendtest.OnBackend(t, vb, make([]float32, M*N), 0)
		vb.MatMul(out, a, bm, nil, tensor.MatMulParams{M: M, N: N, K: K})
	}
	mmForceShader, mmForceSplits = "", 0
}
