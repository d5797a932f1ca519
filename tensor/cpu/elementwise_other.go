//go:build !amd64 || purego

package cpu

// axpy sets y[i] += a*x[i].
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(a * x[i])
	}
}
