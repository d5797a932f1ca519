//go:build amd64 && !purego

package gemm

import (
	"golang.org/x/sys/cpu"

	"github.com/vkgrad/vkgrad/tensor"
)

//go:noescape
func kern8x48avx512(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)

//go:noescape
func kern6x16avx2(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)

//go:noescape
func kern4x16avx2(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)

//go:noescape
func dot4x4avx512(k16 int, a0, a1, a2, a3 *float32, b *float32, ldb int, out *float32)

//go:noescape
func dot2x4avx2(k16 int, a0, a1, a2, a3 *float32, b *float32, ldb int, out *float32)

//go:noescape
func dot4x4avx512bf16(k16 int, a0, a1, a2, a3 *float32, b *uint16, ldb int, out *float32)

//go:noescape
func dot2x4avx2bf16(k16 int, a0, a1, a2, a3 *float32, b *uint16, ldb int, out *float32)

//go:noescape
func transpose8(dst *float32, dstStride int, src *float32, srcStride int, nblk int)

//go:noescape
func transpose6(dst *float32, src *float32, srcStride int, nblk int)

//go:noescape
func fmaLoopAVX512(n int)

//go:noescape
func fmaLoopAVX2(n int)

// The AVX2 kernel's 16-column panel is 24 KiB at kc = 384, half of L1, and K = 768, 2304
// and 3072 are multiples: on one thread the GPT-2 products ran 1.5-2% faster in total than
// at kcBlock (160; fwd products 2-4%), while kc = 512 was slower. The AVX-512 kernel's
// 48-column panel keeps kcBlock (128-256 measured within 1% of each other). The AVX2 edge
// kernel takes the last 4 rows of 256-row products (256 = 42*6 + 4): 0.7% less CPU time on
// those products than a 6-row tile computed into scratch.
var (
	avx512Kernel = &microKernel{name: "avx512", mr: 8, nr: 48, fn: kern8x48avx512, dot: dot4x4avx512, dotBF16: dot4x4avx512bf16, dotRows: 4, peak: peakAVX512}
	avx2Kernel   = &microKernel{name: "avx2", mr: 6, nr: 16, kc: 384, fn: kern6x16avx2, edge: kern4x16avx2, edgeRows: 4, dot: dot2x4avx2, dotBF16: dot2x4avx2bf16, dotRows: 2, peak: peakAVX2}
)

// kernels lists the kernels this CPU can run, best first.
var kernels = func() []*microKernel {
	var ks []*microKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, goKernel)
}()

func init() { active = kernels[0] }

// packBT packs a full panel of transposed B (nr rows of the stored (n,k) matrix) with 8x8
// AVX transposes, leaving a k remainder below 8 to scalar code.
func packBT(dst, b []float32, ldb, pc, kb, jr, nr int) bool {
	if !cpu.X86.HasAVX || nr%8 != 0 {
		return false
	}
	nblk := kb / 8
	if nblk > 0 {
		_ = dst[(8*nblk-1)*nr+nr-1]
		for g := 0; g < nr; g += 8 {
			// The last source row read is jr+g+7, up to column pc+8*nblk-1.
			_ = b[(jr+g+7)*ldb+pc+8*nblk-1]
			transpose8(&dst[g], nr, &b[(jr+g)*ldb+pc], ldb, nblk)
		}
	}
	for p := 8 * nblk; p < kb; p++ {
		d := dst[p*nr : p*nr+nr]
		for jj := range d {
			d[jj] = b[(jr+jj)*ldb+pc+p]
		}
	}
	return true
}

func peakAVX512(n int) float64 {
	fmaLoopAVX512(n)
	return 12 * 16 * 2
}

func peakAVX2(n int) float64 {
	fmaLoopAVX2(n)
	return 12 * 8 * 2
}

//go:noescape
func copyRows8(dst *float32, src *float32, srcStride int, n int)

//go:noescape
func copyRows6(dst *float32, src *float32, srcStride int, n int)

//go:noescape
func copyRows16(dst *float32, src *float32, srcStride int, n int)

//go:noescape
func copyRows48(dst *float32, src *float32, srcStride int, n int)

// prefetchRows asks for lines cache lines from the start of each of rows rows, stride bytes
// apart, to be brought into L2. Addresses are plain integers: a prefetch never faults, and
// a walk may step one row past its operand.
//
//go:noescape
func prefetchRows(src uintptr, stride uintptr, rows int, lines int)

// packBRows packs a full panel of B not transposed (kb rows of nr floats) with vector copies.
func packBRows(dst, b []float32, ldb, pc, kb, jr, nr int) bool {
	_ = dst[kb*nr-1]
	_ = b[(pc+kb-1)*ldb+jr+nr-1]
	switch {
	case nr == 48 && cpu.X86.HasAVX512F:
		copyRows48(&dst[0], &b[pc*ldb+jr], ldb, kb)
	case nr == 16 && cpu.X86.HasAVX:
		copyRows16(&dst[0], &b[pc*ldb+jr], ldb, kb)
	default:
		return false
	}
	return true
}

// packAStrip packs a full 8- or 6-row strip of op(A) with vector copies (transposed A holds
// the values of each k contiguously) or 8x8 transposes; other strip heights use scalar code.
func packAStrip(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) bool {
	if (mr != 8 && mr != 6) || !cpu.X86.HasAVX {
		return false
	}
	_ = dst[mr*kb-1]
	if transA {
		_ = a[(pc+kb-1)*lda+ir+mr-1]
		if mr == 8 {
			copyRows8(&dst[0], &a[pc*lda+ir], lda, kb)
		} else {
			copyRows6(&dst[0], &a[pc*lda+ir], lda, kb)
		}
		return true
	}
	_ = a[(ir+mr-1)*lda+pc+kb-1]
	nblk := kb / 8
	if nblk > 0 {
		if mr == 8 {
			transpose8(&dst[0], 8, &a[ir*lda+pc], lda, nblk)
		} else {
			transpose6(&dst[0], &a[ir*lda+pc], lda, nblk)
		}
	}
	for p := 8 * nblk; p < kb; p++ {
		g := dst[p*mr : p*mr+mr]
		for i := range g {
			g[i] = a[(ir+i)*lda+pc+p]
		}
	}
	return true
}

//go:noescape
func roundBF16AVX2(s *float32, n int)

//go:noescape
func roundFP16AVX2(s *float32, n int)

// roundVector rounds the longest run of whole groups of 8 values at the start of s to p's
// format with AVX2, giving roundOperand's bits, and returns its length (0 without AVX2).
func roundVector(s []float32, p tensor.Precision) int {
	n := len(s) &^ 7
	if n == 0 || !cpu.X86.HasAVX2 {
		return 0
	}
	switch p {
	case tensor.BF16:
		roundBF16AVX2(&s[0], n)
	case tensor.FP16:
		roundFP16AVX2(&s[0], n)
	default:
		return 0
	}
	return n
}
