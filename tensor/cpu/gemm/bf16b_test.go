package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// TestBF16BitsMatchesTensor checks BF16Bits against tensor.RoundBfloat16 on values at the
// rounding boundaries, infinities and random bits, at lengths that leave scalar tails; a NaN
// must stay a NaN of its sign (its payload may not fit).
func TestBF16BitsMatchesTensor(t *testing.T) {
	bits := []uint32{0, 0x80000000, 1, 0x807fffff, 0x3f808000, 0x3f818000, 0x3f807fff, 0x7f7fffff,
		0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff}
	r := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		bits = append(bits, r.Uint32())
	}
	src := make([]float32, len(bits))
	for i, b := range bits {
		src[i] = math.Float32frombits(b)
	}
	for _, n := range []int{0, 5, 13, 1024, 1031, len(src)} {
		got := make([]uint16, n)
		BF16Bits(got, src[:n])
		for i, h := range got {
			want := math.Float32bits(tensor.RoundBfloat16(src[i]))
			if v := src[i]; v != v {
				if w := math.Float32frombits(uint32(h) << 16); w == w || (h>>15) != uint16(bits[i]>>31) {
					t.Fatalf("n=%d: NaN %#08x gives %#04x", n, bits[i], h)
				}
				continue
			}
			if uint32(h)<<16 != want {
				t.Fatalf("n=%d: %#08x gives %#04x, want %#08x", n, bits[i], h, want)
			}
		}
	}
}

// TestSgemmBF16MatchesPrecision checks that a product with bfloat16 B bits is, bit for bit,
// SgemmPrecisionThreads in bfloat16 on B's float32 values, with and without a bias, with beta
// 0 and 1 and A transposed or not, for every kernel, on 1 and 3 threads: m = 1..16 (the dot
// kernels, k past and short of a multiple of 16, n not a multiple of 4) and more rows (B
// widened as it is packed, with K in one kc block or more than two).
func TestSgemmBF16MatchesPrecision(t *testing.T) {
	type shape struct{ m, n, k int }
	var shapes []shape
	for m := 1; m <= 16; m++ {
		shapes = append(shapes, shape{m, 37, 16*m + 7}, shape{m, 8, 16})
	}
	shapes = append(shapes, shape{3, 5, 9}, shape{17, 29, 41}, shape{40, 70, 300}, shape{2, 130, 600}, shape{40, 70, 1100})
	r := rand.New(rand.NewPCG(1, 2))
	for _, kern := range kernels {
		t.Run(kern.name, func(t *testing.T) {
			useKernel(t, kern)
			for _, th := range []int{1, 3} {
				for _, s := range shapes {
					for _, transA := range []bool{false, true} {
						name := fmt.Sprintf("threads=%d m=%d n=%d k=%d transA=%v", th, s.m, s.n, s.k, transA)
						checkBF16Product(t, r, name, th, transA, s.m, s.n, s.k)
					}
				}
			}
		})
	}
}

// checkBF16Product runs one shape through SgemmBF16Threads and SgemmBiasBF16Threads and
// compares each with its float32-B counterpart in bfloat16 precision.
func checkBF16Product(t *testing.T, r *rand.Rand, name string, threads int, transA bool, m, n, k int) {
	t.Helper()
	lda, ldb, ldc := k+3, k+5, n+2
	if transA {
		lda = m + 3
	}
	arows := m
	if transA {
		arows = k
	}
	a := randSlice(r, arows*lda)
	bf := randSlice(r, n*ldb)
	bh := make([]uint16, len(bf))
	BF16Bits(bh, bf)
	bias := randSlice(r, n)
	c0 := randSlice(r, m*ldc)
	for _, beta := range []float32{0, 1} {
		want := append([]float32(nil), c0...)
		got := append([]float32(nil), c0...)
		SgemmPrecisionThreads(threads, tensor.BF16, transA, true, m, n, k, 0.75, a, lda, bf, ldb, beta, want, ldc)
		SgemmBF16Threads(threads, transA, m, n, k, 0.75, a, lda, bh, ldb, beta, got, ldc)
		sameBits(t, fmt.Sprintf("%s beta=%v", name, beta), got, want)
	}
	want := append([]float32(nil), c0...)
	got := append([]float32(nil), c0...)
	SgemmBiasPrecisionThreads(threads, tensor.BF16, transA, true, m, n, k, 1, a, lda, bf, ldb, bias, want, ldc)
	SgemmBiasBF16Threads(threads, transA, m, n, k, 1, a, lda, bh, ldb, bias, got, ldc)
	sameBits(t, name+" bias", got, want)
}

func sameBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: c[%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

// TestSgemmBF16Validates checks that a bfloat16 B too short for its layout panics with
// Validate's message naming b.
func TestSgemmBF16Validates(t *testing.T) {
	err := ValidateBF16(false, 2, 3, 4, make([]float32, 8), 4, make([]uint16, 11), 4, make([]float32, 6), 3)
	if err == nil || err.Error() != "gemm: b has 11 elements, its 3x4 layout with ldb=4 needs 12" {
		t.Fatalf("ValidateBF16 = %v", err)
	}
	defer func() {
		if p := recover(); p == nil || fmt.Sprint(p) != err.Error() {
			t.Fatalf("panic %v, want %v", p, err)
		}
	}()
	SgemmBF16Threads(1, false, 2, 3, 4, 1, make([]float32, 8), 4, make([]uint16, 11), 4, 0, make([]float32, 6), 3)
}
