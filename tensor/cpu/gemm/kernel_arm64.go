//go:build arm64 && !purego

package gemm

import "github.com/vkgrad/vkgrad/tensor"

//go:noescape
func kern8x12neon(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)

//go:noescape
func fmaLoopNEON(n int)

// prefetchRows asks for lines cache lines from the start of each of rows rows, stride bytes
// apart, to be brought into L2. Addresses are plain integers: a prefetch never faults, and
// a walk may step one row past its operand.
//
//go:noescape
func prefetchRows(src uintptr, stride uintptr, rows int, lines int)

// neonKernel runs on every arm64 CPU: Advanced SIMD is part of the base architecture.
var neonKernel = &microKernel{name: "neon", mr: 8, nr: 12, fn: kern8x12neon, peak: peakNEON}

// kernels lists the kernels this build can run, best first.
var kernels = []*microKernel{neonKernel, goKernel}

func init() { active = kernels[0] }

func peakNEON(n int) float64 {
	fmaLoopNEON(n)
	return 24 * 4 * 2
}

// The operands are packed by the scalar loops: at nr=12 a panel row is three vectors and a
// strip of A eight values, small enough that copying is not where a step's time goes.

func packBT(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

func packAStrip(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) bool {
	return false
}

func packBRows(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// roundVector has no vector code here: roundOperand rounds every value.
func roundVector(s []float32, p tensor.Precision) int { return 0 }
