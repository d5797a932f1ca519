//go:build arm64 && !purego

package cpu

// The RoPE kernels (rope_arm64.s, written by rope_neon_gen.go).

//go:noescape
func rope4NEON(o, x, cos, sin *float32, n, half int)

//go:noescape
func ropeBwd4NEON(dinp, grad, cos, sin *float32, n, half int)

func ropeVector(o, x, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 4)
	if n > 0 {
		_, _, _ = o[half+n-1], x[half+n-1], sin[n-1]
		rope4NEON(&o[0], &x[0], &cos[0], &sin[0], n, half)
	}
	return n
}

func ropeBackwardVector(dx, g, cos, sin []float32) int {
	half := len(cos)
	n := vectorLen(half, 4)
	if n > 0 {
		_, _, _ = dx[half+n-1], g[half+n-1], sin[n-1]
		ropeBwd4NEON(&dx[0], &g[0], &cos[0], &sin[0], n, half)
	}
	return n
}
