//go:build amd64 && !purego

package cpu

// The AdamW kernel of adamw.go (adamw_amd64.s).

//go:noescape
func adamwAVX2(p, grad, m, v *float32, n int, c *[10]float32)

// adamVector runs the vector AdamW on the leading multiple of 8 and reports how many it did.
func adamVector(p, g, m, v []float32, c *[10]float32) int {
	if !haveAVX2FMA {
		return 0
	}
	n := len(p) &^ 7
	if n > 0 {
		_, _, _ = g[n-1], m[n-1], v[n-1]
		adamwAVX2(&p[0], &g[0], &m[0], &v[0], n, c)
	}
	return n
}
