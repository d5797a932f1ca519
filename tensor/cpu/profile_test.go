package cpu

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

func TestKernelProfileCountsOps(t *testing.T) {
	b := NewWithThreads(2)
	defer b.Close()
	x := mk(t, b, make([]float32, 64), 64)
	b.Fill(x, 1) // before profiling: not counted
	b.SetProfiling(true)
	b.Fill(x, 2)
	b.Fill(x, 3)
	b.Scale(x, 2)
	out := mk(t, b, make([]float32, 16), 16)
	b.MatMul(out, x, x, nil, tensor.MatMulParams{M: 4, N: 4, K: 16, TransB: true})
	got := map[string]int{}
	var share float64
	for _, e := range b.KernelProfile() {
		got[e["kernel"].(string)] = e["calls"].(int)
		share += e["share"].(float64)
	}
	want := map[string]int{"Fill": 2, "Scale": 1, "MatMul 4x4x16 A Bᵀ": 1}
	if len(got) != len(want) {
		t.Fatalf("profile %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d calls, want %d (profile %v)", k, got[k], n, got)
		}
	}
	if share < 0.99 || share > 1.01 {
		t.Errorf("shares sum to %v, want 1", share)
	}
	b.SetProfiling(false)
	b.Fill(x, 4)
	if p := b.KernelProfile(); len(p) != 0 {
		t.Errorf("profile after SetProfiling(false): %v", p)
	}
}
