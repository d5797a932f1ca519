//go:build amd64 && !purego

package cpu

// The kernels of crossentropy.go (crossentropy_amd64.s): the softmax's division by its sum
// and the log-softmax gather's row statistics and gradient.

//go:noescape
func divAVX2(x *float32, n int, s float32)

// divScalar sets x[i] /= s.
func divScalar(x []float32, s float32) {
	n := 0
	if haveAVX2FMA {
		n = len(x) &^ 7
		if n > 0 {
			divAVX2(&x[0], n, s)
		}
	}
	for i := n; i < len(x); i++ {
		x[i] /= s
	}
}

//go:noescape
func lsgStatsAVX2(l *float32, e *float64, n int, invT, zmax float64, sums *[8]float64)

//go:noescape
func lsgGradAVX2(d *float32, l *float32, e *float64, n int, c *[7]float64)

// lsgVector lets tests run the portable log-softmax loops where the vector kernels exist.
var lsgVector = true

// lsgStatsVec runs lsgStatsAVX2 on the leading multiple of 4 and reports how many it did.
func lsgStatsVec(l []float32, e []float64, invT, zmax float64, sums *[8]float64) int {
	if !haveAVX2FMA || !lsgVector {
		return 0
	}
	n := len(l) &^ 3
	if n > 0 {
		_ = e[n-1]
		lsgStatsAVX2(&l[0], &e[0], n, invT, zmax, sums)
	}
	return n
}

// lsgGradVec runs lsgGradAVX2 on the leading multiple of 4 and reports how many it did.
func lsgGradVec(d, l []float32, e []float64, c *[7]float64) int {
	if !haveAVX2FMA || !lsgVector {
		return 0
	}
	n := len(l) &^ 3
	if n > 0 {
		_, _ = d[n-1], e[n-1]
		lsgGradAVX2(&d[0], &l[0], &e[0], n, c)
	}
	return n
}
