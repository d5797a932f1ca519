//go:build !amd64 || purego

package gemm

// kernels lists the kernels this build can run, best first.
var kernels = []*microKernel{goKernel}

// packBT has no vector version here; packB falls back to its scalar loop.
func packBT(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// packAStrip has no vector version here; packA falls back to scalar code.
func packAStrip(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) bool { return false }

// packBRows has no vector version here; packB falls back to copy.
func packBRows(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// prefetchA is a no-op without assembly.
func prefetchA(a []float32, lda int, transA bool, i0, i1, pc, kb, q, parts int) {}

// prefetchB is a no-op without assembly.
func prefetchB(b []float32, ldb int, transB bool, pc, kb, jr, nrr, q, parts int) {}
