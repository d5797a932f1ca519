package gemm

import "unsafe"

// Both generators are named here, in a file every architecture builds, so that go generate on
// any machine rewrites both kernel_amd64.s and kernel_arm64.s.
//
//go:generate go run kernel_gen.go
//go:generate go run kernel_neon_gen.go

// microKernel multiplies packed strips of op(A) by a packed panel of op(B) over k steps and
// stores C = alpha*acc + beta*C for each mr x nr tile (C is not read when beta == 0). Row i
// of the strip at step p is a[p*mr + i], column j of the panel is b[p*nr + j], and row i of
// the tile starts at c[i*ldc]; strips > 1 runs the next strip (a + mr*k) into the tile
// below (c + mr*ldc). While it runs, the kernel advances pf (see prefetchWalk).
type microKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)
	// edge, where not nil, computes the first edgeRows rows of a strip (packed mr rows deep)
	// in place, for a last strip with just that many rows, instead of fn computing the whole
	// tile into scratch for the valid rows to be copied out.
	edge     func(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)
	edgeRows int
	// kc, where not 0, replaces kcBlock as the k steps of a packed panel: a narrow panel
	// stays in L1 over more of them, and each kc block is one more pass over C.
	kc int
	// dot, where not nil, serves products of a few rows (dotMaxRows) with B transposed, as
	// in a decoding step, dotRows rows of A (2 or 4; a2 and a3 unread with 2) and four of B
	// at a time: out[4i+j] = sum over p < k16 of ai[p]*b[j*ldb+p] for i < dotRows, j < 4,
	// k16 a multiple of 16. Reading B's rows in place avoids transposing all of B for a
	// handful of rows.
	dot func(k16 int, a0, a1, a2, a3 *float32, b *float32, ldb int, out *float32)
	// dotBF16 is dot reading B as bfloat16 bits, widened exactly to float32: the same bits
	// as dot on B's values rounded to bfloat16 and stored as float32.
	dotBF16 func(k16 int, a0, a1, a2, a3 *float32, b *uint16, ldb int, out *float32)
	dotRows int
	// peak runs n iterations of a register-only multiply-add loop at the kernel's vector
	// width and returns the floating-point operations per iteration.
	peak func(n int) float64
}

// kcBlock returns the k steps of the kernel's packed panels.
func (kern *microKernel) kcBlock() int {
	if kern.kc > 0 {
		return kern.kc
	}
	return kcBlock
}

// goKernel is the portable kernel: a 4x4 tile of scalar accumulators.
var goKernel = &microKernel{name: "go", mr: 4, nr: 4, fn: kernGo4x4, peak: peakLoopGo}

// active is the kernel Sgemm uses: the best one this CPU supports, chosen at init.
var active = goKernel

// kernGo4x4 runs the portable kernel down strips strips; it leaves the prefetch walk to
// the caller's finish.
func kernGo4x4(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, _ *prefetchWalk) {
	for s := 0; s < strips; s++ {
		tileGo4x4(k, (*float32)(unsafe.Add(unsafe.Pointer(a), 4*4*k*s)), b, (*float32)(unsafe.Add(unsafe.Pointer(c), 4*4*ldc*s)), ldc, alpha, beta)
	}
}

// tileGo4x4 computes one 4x4 tile.
func tileGo4x4(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p < k; p++ {
		bp := bs[p*4 : p*4+4 : p*4+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		ap := as[p*4 : p*4+4 : p*4+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	store4(cs[0:4:4], c00, c01, c02, c03, alpha, beta)
	store4(cs[ldc:ldc+4:ldc+4], c10, c11, c12, c13, alpha, beta)
	store4(cs[2*ldc:2*ldc+4:2*ldc+4], c20, c21, c22, c23, alpha, beta)
	store4(cs[3*ldc:3*ldc+4:3*ldc+4], c30, c31, c32, c33, alpha, beta)
}

func store4(c []float32, v0, v1, v2, v3, alpha, beta float32) {
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*v0, alpha*v1, alpha*v2, alpha*v3
		return
	}
	c[0] = alpha*v0 + beta*c[0]
	c[1] = alpha*v1 + beta*c[1]
	c[2] = alpha*v2 + beta*c[2]
	c[3] = alpha*v3 + beta*c[3]
}

// peakLoopGo runs n iterations of 12 independent scalar multiply-adds and returns the
// floating-point operations per iteration.
func peakLoopGo(n int) float64 {
	var s [12]float32
	for i := range s {
		s[i] = float32(i)
	}
	const m, a = 0.999, 1e-3
	for it := 0; it < n; it++ {
		s[0] = s[0]*m + a
		s[1] = s[1]*m + a
		s[2] = s[2]*m + a
		s[3] = s[3]*m + a
		s[4] = s[4]*m + a
		s[5] = s[5]*m + a
		s[6] = s[6]*m + a
		s[7] = s[7]*m + a
		s[8] = s[8]*m + a
		s[9] = s[9]*m + a
		s[10] = s[10]*m + a
		s[11] = s[11]*m + a
	}
	// Reading every accumulator keeps the compiler from dropping the loop; the sum is never
	// negative.
	var sum float32
	for _, x := range s {
		sum += x
	}
	if sum < 0 {
		return 0
	}
	return 12 * 2
}

// KernelName names the micro-kernel Sgemm uses on this machine: "avx512" or "avx2" on amd64,
// "neon" on arm64, or "go" (the portable kernel, used on other architectures and with the
// purego build tag).
func KernelName() string { return active.name }
