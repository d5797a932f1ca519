package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// TestProductPrecisionRoundsMatMul checks every form of MatMul (transposes, batches,
// accumulate, bias, GeluOut) in bfloat16 and binary16 against the float32 MatMul of operands
// rounded beforehand, bit for bit, and that it differs from the float32 MatMul.
func TestProductPrecisionRoundsMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	round := map[tensor.Precision]func(float32) float32{tensor.BF16: tensor.RoundBfloat16, tensor.FP16: tensor.RoundFloat16}
	for _, prec := range []tensor.Precision{tensor.BF16, tensor.FP16} {
		for _, sh := range [][3]int{{3, 37, 33}, {64, 96, 200}, {1, 5, 40}} {
			M, N, K := sh[0], sh[1], sh[2]
			for form := 0; form < 32; form++ {
				p := tensor.MatMulParams{M: M, N: N, K: K, TransA: form&1 != 0, TransB: form&2 != 0, Accumulate: form&4 != 0}
				withBias, gelu := form&8 != 0, form&16 != 0
				if form&16 != 0 && form&4 != 0 {
					p.Batch = 2
				}
				nb := max(p.Batch, 1)
				a, bm := randn(r, nb*M*K, 1), randn(r, nb*K*N, 1)
				c0, bias := randn(r, nb*M*N, 1), randn(r, N, 1)
				ra, rb := append([]float32(nil), a...), append([]float32(nil), bm...)
				for i := range ra {
					ra[i] = round[prec](ra[i])
				}
				for i := range rb {
					rb[i] = round[prec](rb[i])
				}
				run := func(prec tensor.Precision, a, bm []float32) (out, geluOut []float32) {
					be := NewWithThreads(2)
					if err := be.SetProductPrecision(prec); err != nil {
						t.Fatal(err)
					}
					o := mk(t, be, c0, nb*M*N)
					var bt, gt *tensor.Tensor
					if withBias {
						bt = mk(t, be, bias, N)
					}
					q := p
					if gelu {
						gt = mk(t, be, make([]float32, nb*M*N), nb*M*N)
						q.GeluOut = gt
					}
					be.MatMul(o, mk(t, be, a, nb*M*K), mk(t, be, bm, nb*K*N), bt, q)
					if gt != nil {
						geluOut = Float32s(gt)
					}
					return Float32s(o), geluOut
				}
				got, gotG := run(prec, a, bm)
				want, wantG := run(tensor.FP32, ra, rb)
				plain, _ := run(tensor.FP32, a, bm)
				differs := false
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v %v %+v bias=%v: out[%d] = %v, want %v", prec, sh, p, withBias, i, got[i], want[i])
					}
					if gelu && math.Float32bits(gotG[i]) != math.Float32bits(wantG[i]) {
						t.Fatalf("%v %v %+v: GeluOut[%d] = %v, want %v", prec, sh, p, i, gotG[i], wantG[i])
					}
					differs = differs || got[i] != plain[i]
				}
				if !differs {
					t.Fatalf("%v %v %+v: the float32 product's bits; nothing was rounded", prec, sh, p)
				}
			}
		}
	}
}

func TestSetProductPrecisionRefusesUnknown(t *testing.T) {
	be := NewWithThreads(1)
	err := be.SetProductPrecision(tensor.Precision(7))
	if err == nil || !strings.Contains(err.Error(), "unknown product precision") {
		t.Fatalf("SetProductPrecision(7) = %v, want an error naming the unknown precision", err)
	}
	if got := be.ProductPrecision(); got != tensor.FP32 {
		t.Fatalf("after a refused precision the backend computes in %v, want fp32", got)
	}
	if err := be.SetProductPrecision(tensor.BF16); err != nil || be.ProductPrecision() != tensor.BF16 {
		t.Fatalf("SetProductPrecision(bf16) = %v, precision now %v", err, be.ProductPrecision())
	}
}
