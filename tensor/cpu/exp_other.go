//go:build !amd64 || purego

package cpu

// expSlice sets x[i] = e^x[i].
func expSlice(x []float64) { expSliceGo(x) }
