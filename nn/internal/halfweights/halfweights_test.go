package halfweights

import (
	"testing"

	"github.com/vkgrad/vkgrad/nn/internal/kvrows/decodertest"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

func matrix(t *testing.T, b tensor.Backend, rows, cols int) *tensor.Tensor {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	w, err := tensor.FromSlice(b, v, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSetChoosesCopies checks which products read a copy: a listed weight (listed twice, copied
// once), at most HalfWeightRows rows, while the backend computes in BF16; everything else
// multiplies the float32 weight. Without BF16 New makes no set, and the nil set multiplies
// the float32 weights.
func TestSetChoosesCopies(t *testing.T) {
	be := &decodertest.HalfCounter{Backend: cpu.NewWithThreads(1)}
	const N, K = 8, 32
	w, other := matrix(t, be, N, K), matrix(t, be, N, K)
	if s, err := New(be, []Matrix{{W: w, N: N, K: K}}); s != nil || err != nil {
		t.Fatalf("New in fp32 = %v, %v; want no set", s, err)
	}
	if err := be.SetProductPrecision(tensor.BF16); err != nil {
		t.Fatal(err)
	}
	if _, ok := tensor.HalfWeightsFor(be); !ok {
		t.Skip("this build's CPU kernel reads no bfloat16 weights in place (purego or arm64)")
	}
	s, err := New(be, []Matrix{{W: w, N: N, K: K}, {W: w, N: N, K: K}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Free()
	if got := s.Bytes(); got != 2*N*K {
		t.Fatalf("Bytes = %d, want %d (one copy)", got, 2*N*K)
	}
	rows := be.HalfWeightRows()
	for _, tc := range []struct {
		name   string
		set    *Set
		w      *tensor.Tensor
		m      int
		prec   tensor.Precision
		copies int
	}{
		{"listed", s, w, rows, tensor.BF16, 1},
		{"too many rows", s, w, rows + 1, tensor.BF16, 0},
		{"unlisted", s, other, 1, tensor.BF16, 0},
		{"fp32 now", s, w, 1, tensor.FP32, 0},
		{"nil set", nil, w, 1, tensor.BF16, 0},
	} {
		if err := be.SetProductPrecision(tc.prec); err != nil {
			t.Fatal(err)
		}
		a, out := matrix(t, be, tc.m, K), matrix(t, be, tc.m, N)
		before := be.Calls
		tc.set.MatMul(be, out, a, tc.w, nil, tensor.MatMulParams{M: tc.m, N: N, K: K, TransB: true})
		if got := be.Calls - before; got != tc.copies {
			t.Errorf("%s: %d products with a copy, want %d", tc.name, got, tc.copies)
		}
	}
	var none *Set
	none.MarkStale()
	if none.Bytes() != 0 || none.Refresh() != nil {
		t.Fatal("a nil set holds something")
	}
	none.Free()
}
