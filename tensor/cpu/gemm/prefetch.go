package gemm

import "unsafe"

// prefetchWalk is a run of cache lines for a kernel to request while it computes: rows
// rows of lines lines each, stride bytes apart. The kernel requests one line per pair of k
// steps and leaves the walk where it stopped, so one walk spreads over a panel's kernel
// calls; finish requests whatever is left. The field order is the assembly's.
type prefetchWalk struct {
	next   uintptr // the next line to request
	left   int     // lines left in the current row, counting next
	row    uintptr // start of the current row
	rows   int     // rows left, counting the current one; 0 when the walk is done
	lines  int     // lines per row
	stride uintptr // bytes between rows
}

// start points the walk at the source of op(X)[r0:r0+rows, c0:c0+cols], where X is stored
// with row stride ld, transposed when trans. A row's run may straddle one more line.
func (w *prefetchWalk) start(x []float32, ld int, trans bool, r0, rows, c0, cols int) {
	if trans {
		r0, rows, c0, cols = c0, cols, r0, rows
	}
	w.rows = 0
	if rows <= 0 || cols <= 0 {
		return
	}
	first := &x[r0*ld+c0]
	_ = x[(r0+rows-1)*ld+c0+cols-1]
	w.next = uintptr(unsafe.Pointer(first))
	w.row = w.next
	w.lines = (cols*4+63)/64 + 1
	w.left = w.lines
	w.rows = rows
	w.stride = uintptr(ld) * 4
}

// finish requests the lines the kernel calls did not reach.
func (w *prefetchWalk) finish() {
	if w.rows == 0 {
		return
	}
	prefetchRows(w.next, 0, 1, w.left)
	prefetchRows(w.row+w.stride, w.stride, w.rows-1, w.lines)
	w.rows = 0
}

// prefetchOp asks for part q of parts of the source of op(X)[r0:r0+rows, c0:c0+cols] to be
// brought into L2, where X is stored with row stride ld, transposed when trans, in one burst.
func prefetchOp(x []float32, ld int, trans bool, r0, rows, c0, cols, q, parts int) {
	if trans {
		r0, rows, c0, cols = c0, cols, r0, rows
	}
	p0, p1 := rows*q/parts, rows*(q+1)/parts
	var w prefetchWalk
	w.start(x, ld, false, r0+p0, p1-p0, c0, cols)
	w.finish()
}
