//go:build arm64 && !purego

package cpu

// The AdamW kernel of adamw.go (adamw_arm64.s, written by adamw_neon_gen.go).

//go:noescape
func adamwNEON(p, grad, m, v *float32, n int, c *[10]float32)

// adamVector runs the NEON AdamW on the leading multiple of 4 and reports how many it did.
func adamVector(p, g, m, v []float32, c *[10]float32) int {
	n := len(p) &^ 3
	if n > 0 {
		_, _, _ = g[n-1], m[n-1], v[n-1]
		adamwNEON(&p[0], &g[0], &m[0], &v[0], n, c)
	}
	return n
}
