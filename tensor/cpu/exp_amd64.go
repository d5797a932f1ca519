//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

//go:noescape
func expAVX2(x *float64, n int)

var haveExpAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expSlice sets x[i] = e^x[i] (see expAVX2 for the accuracy and range).
func expSlice(x []float64) {
	if !haveExpAVX2 {
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
