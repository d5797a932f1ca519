package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// roundedCopy is s with every value rounded to p's format by package tensor.
func roundedCopy(s []float32, p tensor.Precision) []float32 {
	round := map[tensor.Precision]func(float32) float32{tensor.BF16: tensor.RoundBfloat16, tensor.FP16: tensor.RoundFloat16}[p]
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = round(v)
	}
	return out
}

// TestRoundOperandMatchesTensor checks the packing's rounding (vector code and the scalar
// tail) against package tensor's on values at every boundary: ties, the ends of binary16's
// normal and subnormal ranges, overflow, infinities, NaN, float32 subnormals and zeros of
// both signs, at every offset in a group of 8.
func TestRoundOperandMatchesTensor(t *testing.T) {
	bits := []uint32{0, 0x80000000, 1, 0x807fffff, 0x00800000, 0x33000000, 0x33000001, 0x337fffff, 0x33800000,
		0x387fffff, 0x38800000, 0x38801000, 0x38803000, 0x3f800000, 0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000,
		0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x7f7fffff, 0x7f7f8000, 0x7f800000, 0xff800000, 0x7fc00000,
		0x7f800001, 0xffffffff, 0x7fffffff, 0x40490fdb, 0xc2f6e979, 0x3a83126f, 0xb8d1b717}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		bits = append(bits, r.Uint32())
	}
	vals := make([]float32, len(bits))
	for i, b := range bits {
		vals[i] = math.Float32frombits(b)
	}
	for _, prec := range []tensor.Precision{tensor.BF16, tensor.FP16} {
		for off := range 8 {
			want := roundedCopy(vals[off:], prec)
			got := append([]float32(nil), vals[off:]...)
			roundOperand(got, prec)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v: %#08x rounds to %#08x, tensor says %#08x", prec, bits[off+i], math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestPrecisionRoundsOperands checks that a product in bfloat16 or binary16 is, bit for bit,
// the float32 product of operands rounded beforehand (the same sums in the same order), with
// and without a bias, for every kernel, both paths and several thread counts; and that it
// differs from the float32 product of the operands as they are, so rounding did happen.
func TestPrecisionRoundsOperands(t *testing.T) {
	shapes := append(append([]shape{}, testShapes...), shape{256, 768, 768})
	for _, kern := range kernels {
		t.Run(kern.name, func(t *testing.T) {
			useKernel(t, kern)
			r := rand.New(rand.NewPCG(11, 12))
			for _, prec := range []tensor.Precision{tensor.BF16, tensor.FP16} {
				for _, s := range shapes {
					for tr := 0; tr < 4; tr++ {
						o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
						checkRoundedProduct(t, o, prec, randSlice(r, s.n))
					}
				}
			}
		})
	}
}

func checkRoundedProduct(t *testing.T, o *operands, prec tensor.Precision, bias []float32) {
	t.Helper()
	ra, rb := roundedCopy(o.a, prec), roundedCopy(o.b, prec)
	for _, withBias := range []bool{false, true} {
		want := append([]float32(nil), o.c...)
		plain := append([]float32(nil), o.c...)
		if withBias {
			SgemmBiasThreads(1, o.transA, o.transB, o.m, o.n, o.k, 1, ra, o.lda, rb, o.ldb, bias, want, o.ldc)
			SgemmBiasThreads(1, o.transA, o.transB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, bias, plain, o.ldc)
		} else {
			SgemmThreads(1, o.transA, o.transB, o.m, o.n, o.k, 0.5, ra, o.lda, rb, o.ldb, 1, want, o.ldc)
			SgemmThreads(1, o.transA, o.transB, o.m, o.n, o.k, 0.5, o.a, o.lda, o.b, o.ldb, 1, plain, o.ldc)
		}
		for _, threads := range []int{1, 3} {
			got := append([]float32(nil), o.c...)
			if withBias {
				SgemmBiasPrecisionThreads(threads, prec, o.transA, o.transB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, bias, got, o.ldc)
			} else {
				SgemmPrecisionThreads(threads, prec, o.transA, o.transB, o.m, o.n, o.k, 0.5, o.a, o.lda, o.b, o.ldb, 1, got, o.ldc)
			}
			differs := false
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v %+v transA=%v transB=%v bias=%v threads=%d: c[%d] = %v, want %v (the product of rounded operands)",
						prec, shape{o.m, o.n, o.k}, o.transA, o.transB, withBias, threads, i, got[i], want[i])
				}
				differs = differs || got[i] != plain[i]
			}
			if !differs {
				t.Fatalf("%v %+v transA=%v transB=%v bias=%v: the same bits as the float32 product; the operands were not rounded",
					prec, shape{o.m, o.n, o.k}, o.transA, o.transB, withBias)
			}
		}
	}
}

// TestPrecisionFloat16Overflows checks that a binary16 operand beyond 65504 rounds to
// infinity, as in hardware, while bfloat16 keeps float32's range.
func TestPrecisionFloat16Overflows(t *testing.T) {
	a, b := []float32{70000, 1}, []float32{1, 1}
	for _, c := range []struct {
		prec tensor.Precision
		want float32
	}{{tensor.FP16, float32(math.Inf(1))}, {tensor.BF16, 70145}, {tensor.FP32, 70001}} {
		out := []float32{0}
		SgemmPrecisionThreads(1, c.prec, false, false, 1, 1, 2, 1, a, 2, b, 1, 0, out, 1)
		if out[0] != c.want {
			t.Errorf("%v: [70000 1]·[1 1] = %v, want %v", c.prec, out[0], c.want)
		}
	}
}

// TestPrecisionFloat32Unchanged checks that FP32 through the precision entry points gives
// SgemmThreads' bits.
func TestPrecisionFloat32Unchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, s := range testShapes {
		for tr := 0; tr < 4; tr++ {
			o := newOperands(r, s, tr&1 != 0, tr&2 != 0)
			want := o.run(1, 0.5)
			got := append([]float32(nil), o.c...)
			SgemmPrecisionThreads(0, tensor.FP32, o.transA, o.transB, o.m, o.n, o.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, got, o.ldc)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v transA=%v transB=%v: c[%d] = %v, want %v", s, o.transA, o.transB, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSgemmPrecision times the GPT-2 shapes that fit in a quick run on one thread in each
// precision: the rounding of packed operands is the whole difference.
func BenchmarkSgemmPrecision(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range gpt2Shapes {
		if s.m*s.n > 1<<22 {
			continue
		}
		ar, ac, br, bc := s.stored()
		a, bm, c := randSlice(r, ar*ac), randSlice(r, br*bc), make([]float32, s.m*s.n)
		for _, prec := range []tensor.Precision{tensor.FP32, tensor.BF16, tensor.FP16} {
			b.Run(fmt.Sprintf("%s_%s", s.name, prec), func(b *testing.B) {
				for b.Loop() {
					SgemmPrecisionThreads(1, prec, s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
				}
				b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
