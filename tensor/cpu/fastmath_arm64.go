//go:build arm64 && !purego

package cpu

// expSlice sets x[i] = e^x[i] (float64: no NEON kernel).
func expSlice(x []float64) { expSliceGo(x) }

//go:noescape
func expShiftSumNEON(dst, src *float32, n int, shift float32, acc *[8]float32)

// expShiftSumVector runs expShiftSum's NEON kernel (exp32_arm64.s) on the first multiple of
// 8 elements and returns how many.
func expShiftSumVector(dst, src []float32, shift float32, acc *[8]float32) int {
	n := len(src) &^ 7
	if n == 0 {
		return 0
	}
	_ = dst[n-1]
	expShiftSumNEON(&dst[0], &src[0], n, shift, acc)
	return n
}
