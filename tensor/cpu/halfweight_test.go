package cpu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

// TestMatMulHalfMatchesBF16MatMul checks that a product with a bfloat16 copy of the weights
// is, bit for bit, MatMul in BF16 on the float32 weights: with a bias, accumulating (with and
// without a bias), with GeluOut and with A transposed, for rows the dot kernels take (1, 3,
// 16) and more (17), on 1 and 3 threads.
func TestMatMulHalfMatchesBF16MatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const N, K = 45, 71
	for _, threads := range []int{1, 3} {
		b := NewWithThreads(threads)
		if err := b.SetProductPrecision(tensor.BF16); err != nil {
			t.Fatal(err)
		}
		w := mk(t, b, randn(r, N*K, 1), N, K)
		h, err := b.NewHalfWeight(w)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Bytes(); got != 2*N*K {
			t.Fatalf("Bytes = %d, want %d", got, 2*N*K)
		}
		bias := mk(t, b, randn(r, N, 1), N)
		for _, M := range []int{1, 3, 16, 17} {
			a := mk(t, b, randn(r, M*K, 1), M, K)
			c0 := randn(r, M*N, 1)
			for _, tc := range []struct {
				name string
				bias *tensor.Tensor
				p    tensor.MatMulParams
				gelu bool
			}{
				{"plain", nil, tensor.MatMulParams{}, false},
				{"bias", bias, tensor.MatMulParams{}, false},
				{"accumulate", nil, tensor.MatMulParams{Accumulate: true}, false},
				{"accumulate+bias", bias, tensor.MatMulParams{Accumulate: true}, false},
				{"bias+gelu", bias, tensor.MatMulParams{}, true},
				{"transA", nil, tensor.MatMulParams{TransA: true}, false},
			} {
				p := tc.p
				p.M, p.N, p.K, p.TransB = M, N, K, true
				want, got := mk(t, b, clone(c0), M, N), mk(t, b, clone(c0), M, N)
				var gWant, gGot *tensor.Tensor
				if tc.gelu {
					gWant, gGot = mk(t, b, make([]float32, M*N), M, N), mk(t, b, make([]float32, M*N), M, N)
				}
				pw, pg := p, p
				pw.GeluOut, pg.GeluOut = gWant, gGot
				b.MatMul(want, a, w, tc.bias, pw)
				b.MatMulHalf(got, a, h, tc.bias, pg)
				name := fmt.Sprintf("threads=%d M=%d %s", threads, M, tc.name)
				if !bitsEqual(Float32s(got), Float32s(want)) {
					t.Fatalf("%s: MatMulHalf differs from MatMul in bf16", name)
				}
				if tc.gelu && !bitsEqual(Float32s(gGot), Float32s(gWant)) {
					t.Fatalf("%s: GeluOut differs", name)
				}
			}
		}
		h.Free()
	}
}

// TestHalfWeightRefresh checks that Refresh takes changed weights (the product then equals
// MatMul on the new ones and differs from the old product) and refuses a tensor of another
// shape or a freed copy, naming the shapes.
func TestHalfWeightRefresh(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := NewWithThreads(1)
	if err := b.SetProductPrecision(tensor.BF16); err != nil {
		t.Fatal(err)
	}
	const M, N, K = 2, 8, 32
	w := mk(t, b, randn(r, N*K, 1), N, K)
	a := mk(t, b, randn(r, M*K, 1), M, K)
	h, err := b.NewHalfWeight(w)
	if err != nil {
		t.Fatal(err)
	}
	p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
	before := mk(t, b, make([]float32, M*N), M, N)
	b.MatMulHalf(before, a, h, nil, p)
	copy(Float32s(w), randn(r, N*K, 1))
	if err := h.Refresh(w); err != nil {
		t.Fatal(err)
	}
	want, got := mk(t, b, make([]float32, M*N), M, N), mk(t, b, make([]float32, M*N), M, N)
	b.MatMul(want, a, w, nil, p)
	b.MatMulHalf(got, a, h, nil, p)
	if !bitsEqual(Float32s(got), Float32s(want)) || bitsEqual(Float32s(got), Float32s(before)) {
		t.Fatal("the refreshed copy does not give the new weights' product")
	}
	if err := h.Refresh(mk(t, b, make([]float32, K*N), K, N)); err == nil || !strings.Contains(err.Error(), "shape (8,32) refreshed from a tensor of shape (32,8)") {
		t.Fatalf("Refresh with another shape: %v", err)
	}
	if _, err := b.NewHalfWeight(mk(t, b, make([]float32, 4), 4)); err == nil || !strings.Contains(err.Error(), "needs a matrix") {
		t.Fatalf("NewHalfWeight of a vector: %v", err)
	}
	h.Free()
	if err := h.Refresh(w); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Fatalf("Refresh after Free: %v", err)
	}
}

// TestHalfWeightsFor checks that the CPU backend offers bfloat16 copies in BF16 precision only,
// and only where its kernel reads them in place.
func TestHalfWeightsFor(t *testing.T) {
	b := NewWithThreads(1)
	inPlace := gemm.BF16DotRows() > 0
	if got, want := b.HalfWeightRows(), gemm.BF16DotRows(); got != want || (inPlace && got != 16) {
		t.Fatalf("HalfWeightRows = %d, want %d (16 with a dot kernel)", got, want)
	}
	for _, tc := range []struct {
		p    tensor.Precision
		want bool
	}{{tensor.FP32, false}, {tensor.BF16, inPlace}, {tensor.FP16, false}} {
		if err := b.SetProductPrecision(tc.p); err != nil {
			t.Fatal(err)
		}
		if _, ok := tensor.HalfWeightsFor(b); ok != tc.want {
			t.Fatalf("%v: HalfWeightsFor = %v, want %v", tc.p, ok, tc.want)
		}
	}
}

// TestMatMulHalfRefusesMismatch checks that a product whose N and K are not the copy's shape
// panics with a message naming both.
func TestMatMulHalfRefusesMismatch(t *testing.T) {
	b := NewWithThreads(1)
	h, err := b.NewHalfWeight(mk(t, b, make([]float32, 6), 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := fmt.Sprint(recover()); !strings.Contains(p, "N=3 K=2, but the weight is 2x3") {
			t.Fatalf("panic %q", p)
		}
	}()
	out, a := mk(t, b, make([]float32, 3), 1, 3), mk(t, b, make([]float32, 2), 1, 2)
	b.MatMulHalf(out, a, h, nil, tensor.MatMulParams{M: 1, N: 3, K: 2, TransB: true})
}
