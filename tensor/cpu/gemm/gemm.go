// Package gemm is the CPU single-precision matrix multiply behind tensor/cpu's MatMul.
package gemm

// Sgemm computes C = alpha * op(A) @ op(B) + beta * C, BLAS-style and row-major: op(A) is
// (m,k), stored (m,k) with row stride lda, or (k,m) when transA; op(B) is (k,n), stored (k,n)
// with row stride ldb, or (n,k) when transB; C is (m,n) with row stride ldc. With beta == 0, C
// is overwritten without being read. It uses all cores and is deterministic.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}
