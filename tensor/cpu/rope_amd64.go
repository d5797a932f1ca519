//go:build amd64 && !purego

package cpu

// The RoPE kernels (rope_amd64.s).

//go:noescape
func rope8AVX2(o, x, cos, sin *float32, n, half int)

//go:noescape
func ropeBwd8AVX2(dinp, grad, cos, sin *float32, n, half int)

func ropeVector(o, x, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 8)
	if n > 0 {
		_, _, _ = o[half+n-1], x[half+n-1], sin[n-1]
		rope8AVX2(&o[0], &x[0], &cos[0], &sin[0], n, half)
	}
	return n
}

func ropeBackwardVector(dx, g, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 8)
	if n > 0 {
		_, _, _ = dx[half+n-1], g[half+n-1], sin[n-1]
		ropeBwd8AVX2(&dx[0], &g[0], &cos[0], &sin[0], n, half)
	}
	return n
}
