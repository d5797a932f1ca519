//go:build !amd64 || purego

package gemm

// kernels lists the kernels this build can run, best first.
var kernels = []*microKernel{goKernel}

// packBT has no vector version here; packB falls back to its scalar loop.
func packBT(dst, b []float32, ldb, pc, kb, jr, nr int) bool { return false }

// peakLoop runs n iterations of 12 independent scalar multiply-adds and returns the
// floating-point operations per iteration.
func peakLoop(n int) float64 {
	var s [12]float32
	for i := range s {
		s[i] = float32(i)
	}
	const m, a = 0.999, 1e-3
	for it := 0; it < n; it++ {
		s[0] = s[0]*m + a
		s[1] = s[1]*m + a
		s[2] = s[2]*m + a
		s[3] = s[3]*m + a
		s[4] = s[4]*m + a
		s[5] = s[5]*m + a
		s[6] = s[6]*m + a
		s[7] = s[7]*m + a
		s[8] = s[8]*m + a
		s[9] = s[9]*m + a
		s[10] = s[10]*m + a
		s[11] = s[11]*m + a
	}
	peakSink = s
	return 12 * 2
}

var peakSink [12]float32

// packAStrip has no vector version here; packA falls back to scalar code.
func packAStrip(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) bool { return false }
