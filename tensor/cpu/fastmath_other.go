//go:build (!amd64 && !arm64) || purego

package cpu

// expSlice sets x[i] = e^x[i].
func expSlice(x []float64) { expSliceGo(x) }

func expShiftSumVector(dst, src []float32, shift float32, acc *[8]float32) int { return 0 }
