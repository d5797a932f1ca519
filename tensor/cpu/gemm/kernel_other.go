//go:build (!amd64 && !arm64) || purego

package gemm

import "github.com/vkgrad/vkgrad/tensor"

// kernels lists the kernels this build can run, best first.
var kernels = []*microKernel{goKernel}

// packBT has no vector version here; packB falls back to its scalar loop.
func packBT(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// packAStrip has no vector version here; packA falls back to scalar code.
func packAStrip(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) bool { return false }

// packBRows has no vector version here; packB falls back to copy.
func packBRows(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// prefetchRows is a no-op without assembly.
func prefetchRows(src uintptr, stride uintptr, rows int, lines int) {}

// roundVector has no vector code here: roundOperand rounds every value.
func roundVector(s []float32, p tensor.Precision) int { return 0 }
