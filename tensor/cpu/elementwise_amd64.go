//go:build amd64 && !purego

package cpu

// The axpy kernel of elementwise.go (elementwise_amd64.s).

//go:noescape
func axpyAVX2(y, x *float32, n int, a float32)

// axpy sets y[i] += a*x[i].
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	n := 0
	if haveAVX2FMA {
		n = len(y) &^ 7
		if n > 0 {
			axpyAVX2(&y[0], &x[0], n, a)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] += a * x[i]
	}
}
