//go:build !amd64 || purego

package cpu

func adamVector(p, g, m, v []float32, c *[10]float32) int { return 0 }

// axpy sets y[i] += a*x[i].
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
