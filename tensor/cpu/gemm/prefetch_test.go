package gemm

import (
	"testing"
	"unsafe"
)

// TestKernelAdvancesPrefetchWalk checks the walk the vector kernels step through: one line
// per pair of k steps across all strips, moving to the next row after lines lines and
// stopping after the last row, and finish completing it.
func TestKernelAdvancesPrefetchWalk(t *testing.T) {
	src := make([]float32, 64*1024)
	for _, kern := range kernels {
		if kern == goKernel {
			continue // the portable kernel leaves the walk to finish
		}
		const ld = 1000
		for _, tc := range []struct{ k, strips, rows, cols int }{
			{k: 7, strips: 3, rows: 4, cols: 100},   // 9 requests: row 1, line 1 (8 lines a row)
			{k: 160, strips: 2, rows: 3, cols: 100}, // 160 pairs: more than the walk's 24 lines
			{k: 1, strips: 4, rows: 2, cols: 30},    // no pairs, no requests
		} {
			a := make([]float32, kern.mr*tc.k*tc.strips)
			b := make([]float32, kern.nr*tc.k)
			c := make([]float32, kern.mr*tc.strips*kern.nr)
			var w prefetchWalk
			w.start(src, ld, false, 2, tc.rows, 8, tc.cols)
			if w.lines != (tc.cols*4+63)/64+1 || w.rows != tc.rows || w.stride != ld*4 {
				t.Fatalf("start: %+v", w)
			}
			base := uintptr(unsafe.Pointer(&src[2*ld+8]))
			// The walk's state after n requests.
			n := min(tc.strips*(tc.k/2), tc.rows*w.lines)
			r, l := n/w.lines, n%w.lines
			want := prefetchWalk{
				next: base + uintptr(r)*w.stride + uintptr(l)*64, left: w.lines - l,
				row: base + uintptr(r)*w.stride, rows: tc.rows - r, lines: w.lines, stride: w.stride,
			}
			if r == tc.rows {
				want.next, want.left = want.row, w.lines // stepped past the last row
			}
			kern.fn(tc.k, &a[0], &b[0], &c[0], kern.nr, 1, 0, tc.strips, &w)
			if w != want {
				t.Errorf("%s k=%d strips=%d: walk %+v, want %+v", kern.name, tc.k, tc.strips, w, want)
			}
			w.finish()
			if w.rows != 0 {
				t.Errorf("%s: finish left %d rows", kern.name, w.rows)
			}
		}
	}
}
