//go:build amd64 && !purego

package cpu

// The vector exponentials of fastmath.go (fastmath_amd64.s): expSlice in float64 and
// expShiftSum's float32 kernel.

//go:noescape
func expAVX2(x *float64, n int)

// expSlice sets x[i] = e^x[i] (see expAVX2 for the accuracy and range).
func expSlice(x []float64) {
	if !haveAVX2FMA {
		expSliceGo(x)
		return
	}
	n := len(x) &^ 3
	if n > 0 {
		expAVX2(&x[0], n)
	}
	if n < len(x) {
		// The tail goes through the same kernel so every element gets the same rounding.
		var t [4]float64
		copy(t[:], x[n:])
		expAVX2(&t[0], 4)
		copy(x[n:], t[:])
	}
}

//go:noescape
func expShiftSumAVX2(dst, src *float32, n int, shift float32, acc *[8]float32)

// expShiftSumVector runs expShiftSum's kernel on the first multiple of 8 elements and
// returns how many.
func expShiftSumVector(dst, src []float32, shift float32, acc *[8]float32) int {
	n := len(src) &^ 7
	if !haveAVX2FMA || n == 0 {
		return 0
	}
	_ = dst[n-1]
	expShiftSumAVX2(&dst[0], &src[0], n, shift, acc)
	return n
}
