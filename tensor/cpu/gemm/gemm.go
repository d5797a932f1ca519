// Package gemm is the CPU single-precision matrix multiply behind tensor/cpu's MatMul.
//
// [Sgemm] computes C = alpha * op(A) @ op(B) + beta * C, BLAS-style and row-major, on
// [Threads] goroutines; [SgemmThreads] takes its own goroutine count, and [SgemmBiasThreads]
// adds a bias to every row in place of beta * C. [Validate] checks the arguments.
//
// The product is computed GotoBLAS-style. A task (a block of C) packs, for each kc block of
// K, its rows of op(A) into strips of mr rows, then packs op(B) one panel of nr columns at a
// time (small enough to stay in L1) and runs a register-blocked micro-kernel down the strips.
// Where its block of C is larger than L2, its rows of op(A) fit in L2 packed whole and K
// spans several kc blocks, it packs the rows all first and takes each panel through all of
// K, keeping a panel of C in cache.
// Vector kernels in assembly (AVX-512 or AVX2+FMA on amd64, NEON on arm64) are chosen at run
// time ([KernelName]); a portable Go kernel serves other architectures and the purego build
// tag. Products of a few rows with B transposed (decoding steps) take a dot-product path
// instead, which reads B in place.
//
// Work is split over C only: each element is summed in a fixed order over K, by one goroutine
// or, where a goroutine that has run out of blocks takes column panels of another's last kc
// block, by two one after the other, so the result is the same bits for any number of threads
// and any schedule.
//
// [SgemmPrecisionThreads] and [SgemmBiasPrecisionThreads] round both operands to bfloat16 or
// binary16 (tensor.RoundBfloat16, tensor.RoundFloat16) and multiply and sum in float32: the
// packed copies are rounded in place while they are in cache, and the dot-product path rounds
// its gathered rows, so each sum adds the same terms in the same order as the float32 product
// of pre-rounded operands.
package gemm

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/vkgrad/vkgrad/internal/workpool"
	"github.com/vkgrad/vkgrad/tensor"
)

// Block sizes. kcBlock (a kernel may set its own kc instead) bounds a packed B panel
// (kcBlock*nr floats, 30 KiB at nr=48) so it stays in L1 beside the A strip and C tile
// streaming past it: a panel that fills L1 (256 rows, 48 KiB) measured 2-4% slower on every
// GPT-2 shape. maxMC bounds a task's packed rows of A (maxMC*kc floats: 320 KiB at kcBlock,
// 768 KiB at the AVX2 kernel's 384) so they stay in L2. minFlopsPerThread keeps small
// products on the calling goroutine, where waking a worker would cost more than it saves.
const (
	kcBlock           = 160
	maxMR             = 8
	maxNR             = 48
	maxMC             = 512
	minFlopsPerThread = 1 << 20
)

var threads atomic.Int32

// SetThreads sets how many goroutines Sgemm uses; n <= 0 restores the default,
// runtime.GOMAXPROCS(0). Results do not depend on it.
func SetThreads(n int) {
	if n < 0 {
		n = 0
	}
	threads.Store(int32(n))
}

// Threads returns the number of goroutines Sgemm uses.
func Threads() int {
	if n := int(threads.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// Validate reports whether the arguments describe a valid Sgemm call: non-negative sizes,
// leading dimensions at least the stored row length, and slices long enough for the rows
// they hold. The error names the argument that is wrong.
func Validate(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) error {
	return validate(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
}

// ValidateBF16 is Validate for SgemmBF16Threads, whose B is bfloat16 bits stored (n,k).
func ValidateBF16(transA bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, c []float32, ldc int) error {
	return validate(transA, true, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
}

// validate is Validate on the operands' lengths.
func validate(transA, transB bool, m, n, k int, la, lda, lb, ldb, lc, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("gemm: negative size m=%d n=%d k=%d", m, n, k)
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if err := checkOperand("a", la, lda, ar, ac); err != nil {
		return err
	}
	if err := checkOperand("b", lb, ldb, br, bc); err != nil {
		return err
	}
	return checkOperand("c", lc, ldc, m, n)
}

// checkOperand checks that a stored rows x cols operand with row stride ld fits in length
// elements.
func checkOperand(name string, length, ld, rows, cols int) error {
	if ld < max(1, cols) {
		return fmt.Errorf("gemm: ld%s=%d is less than the %d columns of stored %s (%dx%d)", name, ld, cols, name, rows, cols)
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	if rows-1 > (math.MaxInt-cols)/ld {
		return fmt.Errorf("gemm: %s's %dx%d layout with ld%s=%d overflows int", name, rows, cols, name, ld)
	}
	if need := (rows-1)*ld + cols; length < need {
		return fmt.Errorf("gemm: %s has %d elements, its %dx%d layout with ld%s=%d needs %d", name, length, rows, cols, name, ld, need)
	}
	return nil
}

// Sgemm computes C = alpha * op(A) @ op(B) + beta * C, BLAS-style and row-major: op(A) is
// (m,k), stored (m,k) with row stride lda, or (k,m) when transA; op(B) is (k,n), stored (k,n)
// with row stride ldb, or (n,k) when transB; C is (m,n) with row stride ldc. With beta == 0, C
// is overwritten without being read. It runs on Threads() goroutines and is deterministic.
//
// Invalid arguments are a programming error and panic with Validate's message; callers taking
// shapes from users should call Validate first.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	SgemmThreads(0, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmThreads is Sgemm on at most threads goroutines (threads <= 0 means Threads()), for
// callers that own a thread budget, such as a CPU backend built for n threads. The result
// is the same bits for any thread count.
func SgemmThreads(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(threads, tensor.FP32, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
}

// SgemmPrecisionThreads is SgemmThreads with both operands rounded to prec's format (FP32:
// as they are) before they are multiplied; products and sums stay float32. The result is the
// bits SgemmThreads gives for operands rounded beforehand.
func SgemmPrecisionThreads(threads int, prec tensor.Precision, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(threads, prec, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc)
}

// SgemmBiasThreads computes C = alpha * op(A) @ op(B) + bias, the bias (n values) added to
// every row, on at most threads goroutines; C is not read. The bits are those of setting
// every row of C to the bias and calling SgemmThreads with beta = 1, but each column panel of
// a task's block of C gets its bias just before the panel is computed, in parallel and while
// it is in cache, instead of in a separate pass over C.
func SgemmBiasThreads(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias []float32, c []float32, ldc int) {
	if len(bias) < n {
		panic(fmt.Sprintf("gemm: bias has %d elements, want n=%d", len(bias), n))
	}
	sgemm(threads, tensor.FP32, transA, transB, m, n, k, alpha, a, lda, b, ldb, 1, bias[:n], c, ldc)
}

// SgemmBiasPrecisionThreads is SgemmBiasThreads with both operands (not the bias) rounded to
// prec's format, as SgemmPrecisionThreads rounds them.
func SgemmBiasPrecisionThreads(threads int, prec tensor.Precision, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias []float32, c []float32, ldc int) {
	if len(bias) < n {
		panic(fmt.Sprintf("gemm: bias has %d elements, want n=%d", len(bias), n))
	}
	sgemm(threads, prec, transA, transB, m, n, k, alpha, a, lda, b, ldb, 1, bias[:n], c, ldc)
}

// SgemmBF16Threads computes C = alpha * op(A) @ Bᵀ + beta * C in bfloat16 precision with B
// given as bfloat16 bits (the high halves of tensor.RoundBfloat16's results, see BF16Bits),
// stored (n,k) with row stride ldb: a weight matrix kept in half the bytes. op(A) is rounded
// to bfloat16 as SgemmPrecisionThreads rounds it. The result is the bits of
// SgemmPrecisionThreads(threads, tensor.BF16, transA, true, ...) on B's float32 values, for
// any m: up to BF16DotRows rows (decoding steps) the kernels read the halves in place, more
// rows widen them as B is packed.
func SgemmBF16Threads(threads int, transA bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	if err := ValidateBF16(transA, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		panic(err)
	}
	run(threads, tensor.BF16, transA, true, m, n, k, alpha, a, lda, nil, b, ldb, beta, nil, c, ldc)
}

// SgemmBiasBF16Threads is SgemmBF16Threads adding a bias (n values) to every row instead of
// reading C, as SgemmBiasPrecisionThreads does.
func SgemmBiasBF16Threads(threads int, transA bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, bias []float32, c []float32, ldc int) {
	if len(bias) < n {
		panic(fmt.Sprintf("gemm: bias has %d elements, want n=%d", len(bias), n))
	}
	if err := ValidateBF16(transA, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		panic(err)
	}
	run(threads, tensor.BF16, transA, true, m, n, k, alpha, a, lda, nil, b, ldb, 1, bias[:n], c, ldc)
}

// BF16Bits writes the bfloat16 nearest each value of src (ties to even: the high half of
// tensor.RoundBfloat16's result, whose low half is zero) into dst, which has len(src)
// elements. A NaN, whose payload may lie in the dropped half, becomes a quiet NaN of its sign.
func BF16Bits(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("gemm: BF16Bits of %d values into %d", len(src), len(dst)))
	}
	for i, v := range src {
		b := math.Float32bits(v)
		switch {
		case b&0x7fffffff < 0x7f800000: // finite: round to nearest even (may carry to infinity)
			dst[i] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
		case b&0x7fffffff == 0x7f800000: // infinity
			dst[i] = uint16(b >> 16)
		default: // NaN
			dst[i] = uint16((b | 0x00400000) >> 16)
		}
	}
}

// sgemm is SgemmThreads with an optional bias; with a bias, beta is 1 and C's old values are
// replaced by the bias as each tile is reached.
func sgemm(threads int, prec tensor.Precision, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, bias []float32, c []float32, ldc int) {
	if err := Validate(transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		panic(err)
	}
	run(threads, prec, transA, transB, m, n, k, alpha, a, lda, b, nil, ldb, beta, bias, c, ldc)
}

// run computes a validated product whose B is float32 (b) or bfloat16 bits (bh, transposed).
func run(threads int, prec tensor.Precision, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, bh []uint16, ldb int, beta float32, bias []float32, c []float32, ldc int) {
	if threads <= 0 {
		threads = Threads()
	}
	if prec < tensor.FP32 || prec > tensor.FP16 {
		panic(fmt.Sprintf("gemm: unknown precision %v", prec))
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		if bias != nil {
			for i := 0; i < m; i++ {
				copy(c[i*ldc:i*ldc+n], bias)
			}
			return
		}
		scaleC(m, n, beta, c, ldc)
		return
	}
	j := getJob()
	tails := j.tails
	*j = job{
		transA: transA, transB: transB, m: m, n: n, k: k,
		alpha: alpha, beta: beta, prec: prec,
		a: a, lda: lda, b: b, bh: bh, ldb: ldb, c: c, ldc: ldc, bias: bias,
		kern: active, tails: tails,
	}
	if j.transB && m <= dotMaxRows && k >= 16 && j.kern.dot != nil && (bh == nil || j.kern.dotBF16 != nil) {
		j.planDot(threads)
	} else {
		j.plan(threads)
	}
	j.run()
	j.a, j.b, j.bh, j.c, j.bias = nil, nil, nil, nil, nil
	putJob(j)
}

// setBias writes the bias into rows i0..i1, columns j0..j1 of C.
func (j *job) setBias(i0, i1, j0, j1 int) {
	for i := i0; i < i1; i++ {
		copy(j.c[i*j.ldc+j0:i*j.ldc+j1], j.bias[j0:j1])
	}
}

// scaleC sets C = beta*C; beta == 0 writes zeros without reading C (which may hold NaNs).
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// job is one Sgemm call: its arguments, its split into tasks (blocks of C), and the counter
// from which goroutines claim tasks.
type job struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	prec           tensor.Precision // operands rounded to bfloat16 or binary16 as they are packed
	a, b, c        []float32
	bh             []uint16  // B as bfloat16 bits, transposed, in place of b
	bias           []float32 // with beta = 1: written into each tile of C before its first use
	lda, ldb, ldc  int
	kern           *microKernel

	dot     bool // computed by dotBlock, by columns
	mc, nc  int  // rows and columns of C per task
	tn      int  // tasks along n
	ntasks  int
	workers int
	next    atomic.Int64
	seq     uint64      // this call's number, telling workspaces' packed rows of A apart
	tails   []panelTail // per task: the panels of its last kc block, for any worker to take
}

// panelTail is the column panels of a task's last kc block. Its owner opens it once every
// earlier kc block of the task is done and the last one's rows of op(A) are packed; from
// then on the owner and any worker that has run out of tasks take panels from next, so the
// job's workers finish together instead of waiting on the slowest task. Each panel of the
// last kc block is still computed once, after the earlier ones, so every C element's sum
// keeps its order.
type panelTail struct {
	open atomic.Bool
	next atomic.Int64
}

// jobSeq numbers the calls (see job.seq).
var jobSeq atomic.Uint64

// tailOpened, where not nil, is called by the owner of task t as it opens the task's tail,
// so that tests can take its panels from another workspace.
var tailOpened func(j *job, t int)

// Free lists of jobs and workspaces. Buffered channels rather than sync.Pool: a sync.Pool
// item put on one P is invisible to a Get on another until it is moved to the shared list, so
// calls that hop between threads would allocate (a workspace is 350-850 KiB).
var (
	freeJobs       = make(chan *job, 64)
	freeWorkspaces = make(chan *workspace, 64)
)

func getJob() *job {
	select {
	case j := <-freeJobs:
		return j
	default:
		return new(job)
	}
}

func putJob(j *job) {
	select {
	case freeJobs <- j:
	default:
	}
}

func getWorkspace() *workspace {
	select {
	case ws := <-freeWorkspaces:
		return ws
	default:
		return newWorkspace()
	}
}

func putWorkspace(ws *workspace) {
	select {
	case freeWorkspaces <- ws:
	default:
	}
}

// plan splits C into a grid of tasks. A task packs its rows of op(A) once per kc block and
// each of its column panels of op(B), so a grid of tm x tn tasks packs A tn times and B tm
// times; plan picks the grid with the least estimated time (multiply-adds plus packing,
// divided by how evenly the tasks share out among the workers). Task boundaries are
// multiples of the kernel's tile, so every C element is computed by the same code path
// whatever the split, and the result does not depend on the thread count.
func (j *job) plan(nthreads int) {
	mr, nr := j.kern.mr, j.kern.nr
	rowTiles := (j.m + mr - 1) / mr
	colTiles := (j.n + nr - 1) / nr
	flops := 2 * float64(j.m) * float64(j.n) * float64(j.k)
	workers := max(1, min(nthreads, int(flops/minFlopsPerThread)))
	// Rough cycles per packed element, measured with AVX-512 on operands in L2: packing A
	// transposes 8x8 blocks, or copies 8 floats from each of kc rows of a transposed A (slow:
	// a new row, often a new page, every 8 floats); B copies rows of a panel or transposes.
	costA, costB := 0.25, 0.2
	if j.transA {
		costA = 0.8
	}
	if j.transB {
		costB = 0.3
	}
	fma := float64(j.m) * float64(j.n) * float64(j.k) / 32
	packA := float64(j.m) * float64(j.k) * costA
	packB := float64(j.n) * float64(j.k) * costB
	// Grids of up to 4 tasks per worker along each side are considered.
	span := 1
	if workers > 1 {
		span = 4 * workers
	}
	tmMin := (rowTiles + maxMC/mr - 1) / (maxMC / mr)
	best := -1.0
	for tm := tmMin; tm <= min(rowTiles, tmMin+span); tm++ {
		mcTiles := (rowTiles + tm - 1) / tm
		tmReal := (rowTiles + mcTiles - 1) / mcTiles
		for tn := 1; tn <= min(colTiles, span); tn++ {
			ncTiles := (colTiles + tn - 1) / tn
			tnReal := (colTiles + ncTiles - 1) / ncTiles
			tasks := tmReal * tnReal
			w := min(workers, tasks)
			rounds := (tasks + w - 1) / w
			eff := float64(tasks) / float64(rounds*workers)
			// No premium on more tasks than workers: they would let a worker whose core another
			// process takes hand work over, but on a quiet machine each extra pass over the packed
			// operands measured 1-5% slower (one task per worker is fastest on GPT-2's shapes).
			cost := (fma + packA*float64(tnReal) + packB*float64(tmReal)) / eff
			if best < 0 || cost < best {
				best = cost
				j.mc, j.nc, j.tn, j.ntasks, j.workers = mcTiles*mr, ncTiles*nr, tnReal, tasks, w
			}
		}
	}
}

// dotMaxRows is the most rows of C computed with the kernel's dot product.
const dotMaxRows = 16

// BF16DotRows is the most rows of op(A) for which SgemmBF16Threads reads B's bfloat16 rows
// in place, on this machine's kernel: dotMaxRows (16), or 0 where the kernel has no dot
// product (the portable and NEON kernels widen B while packing it, whatever the rows).
func BF16DotRows() int {
	if active.dotBF16 == nil {
		return 0
	}
	return dotMaxRows
}

// planDot splits C by columns, in groups of 4, for dotBlock.
func (j *job) planDot(nthreads int) {
	flops := 2 * float64(j.m) * float64(j.n) * float64(j.k)
	workers := max(1, min(nthreads, int(flops/minFlopsPerThread)))
	groups := (j.n + 3) / 4
	perTask := max(1, (groups+4*workers-1)/(4*workers))
	j.dot = true
	j.mc, j.nc = j.m, 4*perTask
	j.tn = (groups + perTask - 1) / perTask
	j.ntasks = j.tn
	j.workers = min(workers, j.ntasks)
}

// dotBlock computes C[:, j0:j1] for a product of few rows with B transposed, as dot
// products of op(A)'s rows with B's rows, four of each at a time; each group of four B rows
// is read from memory once and from L1 for the other groups of A rows.
func (j *job) dotBlock(ws *workspace, j0, j1 int) {
	m, k := j.m, j.k
	if j.bias != nil {
		j.setBias(0, m, j0, j1)
	}
	// Scratch lives in the workspace: the kernel is called through a function value, so
	// pointers to locals would escape and allocate.
	rows, out := &ws.rows, &ws.out
	if j.prec != tensor.FP32 {
		j.gatherRoundedRows(ws)
	} else if j.transA {
		// op(A)'s rows are columns of the stored A: gather them once for this task.
		if cap(ws.arows) < m*k {
			ws.arows = make([]float32, m*k)
		}
		buf := ws.arows[:m*k]
		for p := 0; p < k; p++ {
			src := j.a[p*j.lda : p*j.lda+m]
			for i, v := range src {
				buf[i*k+p] = v
			}
		}
		for i := 0; i < m; i++ {
			rows[i] = buf[i*k : i*k+k]
		}
	} else {
		for i := 0; i < m; i++ {
			rows[i] = j.a[i*j.lda : i*j.lda+k]
		}
	}
	for i := m; i < len(rows); i++ {
		rows[i] = rows[0] // computed and discarded
	}
	k16 := k &^ 15
	for jc := j0; jc < j1; jc += 4 {
		g := min(4, j1-jc)
		// B's rows jc..jc+g: in place, or rounded copies k apart.
		bs, bo, ldb := j.b, jc*j.ldb, j.ldb
		switch {
		case j.bh != nil:
			bs, bo, ldb = j.widenedBRows(ws, jc, g, k16), 0, k
		case j.prec != tensor.FP32:
			bs, bo, ldb = j.roundedBRows(ws, jc, g), 0, k
		}
		step := j.kern.dotRows
		for ig := 0; ig < m; ig += step {
			r := rows[ig : ig+4]
			mg := min(step, m-ig)
			if g == 4 && j.bh != nil {
				_ = j.bh[(jc+3)*j.ldb+k-1]
				j.kern.dotBF16(k16, &r[0][0], &r[1][0], &r[2][0], &r[3][0], &j.bh[jc*j.ldb], j.ldb, &out[0])
			} else if g == 4 {
				_ = bs[bo+3*ldb+k-1]
				j.kern.dot(k16, &r[0][0], &r[1][0], &r[2][0], &r[3][0], &bs[bo], ldb, &out[0])
			} else {
				*out = [16]float32{}
				for x := 0; x < g; x++ {
					brow := bs[bo+x*ldb : bo+x*ldb+k16]
					for i := 0; i < mg; i++ {
						var s float32
						for p, v := range brow {
							s += r[i][p] * v
						}
						out[4*i+x] = s
					}
				}
			}
			for x := 0; x < g; x++ {
				brow := bs[bo+x*ldb+k16 : bo+x*ldb+k]
				for i := 0; i < mg; i++ {
					s := out[4*i+x]
					for p, v := range brow {
						s += r[i][k16+p] * v
					}
					ci := (ig+i)*j.ldc + jc + x
					if j.beta == 0 {
						j.c[ci] = j.alpha * s
					} else {
						j.c[ci] = j.alpha*s + j.beta*j.c[ci]
					}
				}
			}
		}
	}
}

// gatherRoundedRows points ws.rows at op(A)'s m rows, rounded to the job's precision, in
// ws.arows.
func (j *job) gatherRoundedRows(ws *workspace) {
	m, k := j.m, j.k
	if cap(ws.arows) < m*k {
		ws.arows = make([]float32, m*k)
	}
	buf := ws.arows[:m*k]
	for i := 0; i < m; i++ {
		row := buf[i*k : i*k+k]
		if j.transA {
			for p := range row {
				row[p] = j.a[p*j.lda+i]
			}
		} else {
			copy(row, j.a[i*j.lda:i*j.lda+k])
		}
		roundOperand(row, j.prec)
		ws.rows[i] = row
	}
}

// roundedBRows copies B's rows jc..jc+g (op(B)'s columns), rounded to the job's precision,
// into ws.brows, k values apart, and returns it.
func (j *job) roundedBRows(ws *workspace, jc, g int) []float32 {
	k := j.k
	if cap(ws.brows) < 4*k {
		ws.brows = make([]float32, 4*k)
	}
	buf := ws.brows[:4*k]
	for x := 0; x < g; x++ {
		row := buf[x*k : x*k+k]
		copy(row, j.b[(jc+x)*j.ldb:(jc+x)*j.ldb+k])
		roundOperand(row, j.prec)
	}
	return buf
}

// widenedBRows widens the values of B's bfloat16 rows jc..jc+g that dotBlock's Go loops read
// into float32 in ws.brows, k values apart, and returns it: whole rows when g < 4, else only
// columns k16..k (the kernel reads the rest in place).
func (j *job) widenedBRows(ws *workspace, jc, g, k16 int) []float32 {
	k := j.k
	if cap(ws.brows) < 4*k {
		ws.brows = make([]float32, 4*k)
	}
	buf := ws.brows[:4*k]
	from := k16
	if g < 4 {
		from = 0
	}
	for x := 0; x < g; x++ {
		off := (jc + x) * j.ldb
		widenBF16(buf[x*k+from:x*k+k], j.bh[off+from:off+k])
	}
	return buf
}

// widenBF16 writes the float32 values of the bfloat16 bits src into dst.
func widenBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// run executes the job on the calling goroutine and up to workers-1 pool helpers.
func (j *job) run() {
	j.next.Store(0)
	j.seq = jobSeq.Add(1)
	if j.workers > 1 && !j.dot {
		if cap(j.tails) < j.ntasks {
			j.tails = make([]panelTail, j.ntasks)
		}
		j.tails = j.tails[:j.ntasks]
		for t := range j.tails {
			j.tails[t].open.Store(false)
			j.tails[t].next.Store(0)
		}
	} else {
		j.tails = j.tails[:0]
	}
	workpool.Run(j, j.workers-1)
}

// Work implements workpool.Job: it computes tasks with a workspace from the free list.
func (j *job) Work(int) {
	ws := getWorkspace()
	j.work(ws)
	putWorkspace(ws)
}

// work claims and computes tasks until none are left.
func (j *job) work(ws *workspace) {
	for {
		t := int(j.next.Add(1) - 1)
		if t >= j.ntasks {
			break
		}
		i0, i1, j0, j1 := j.taskBlock(t)
		if j.dot {
			j.dotBlock(ws, j0, j1)
			continue
		}
		j.block(ws, t, i0, i1, j0, j1)
	}
	j.shareTails(ws)
}

// taskBlock returns task t's block of C, C[i0:i1, j0:j1].
func (j *job) taskBlock(t int) (i0, i1, j0, j1 int) {
	i0, j0 = t/j.tn*j.mc, t%j.tn*j.nc
	return i0, min(j.m, i0+j.mc), j0, min(j.n, j0+j.nc)
}

// shareTails computes panels left in the open tails of other tasks, packing their rows of
// op(A) where the workspace does not hold them already.
func (j *job) shareTails(ws *workspace) {
	for t := range j.tails {
		tail := &j.tails[t]
		i0, i1, j0, j1 := j.taskBlock(t)
		if !tail.open.Load() || int(tail.next.Load()) >= j.panels(j0, j1) {
			continue
		}
		kc := j.kern.kcBlock()
		pc := (j.k - 1) / kc * kc
		if ws.packed != (packedRows{j.seq, i0, i1, pc}) {
			ws.fit(kc*maxMC, kc)
			j.packABlock(ws.ap, i0, i1, pc, j.k-pc)
			ws.packed = packedRows{j.seq, i0, i1, pc}
		}
		j.takePanels(ws, tail, i0, i1, j0, j1, pc, j.k-pc)
	}
}

// panels is the number of column panels in columns j0..j1.
func (j *job) panels(j0, j1 int) int { return (j1 - j0 + j.kern.nr - 1) / j.kern.nr }

// takePanels computes panels of the last kc block (pc, kb) of the task with block
// C[i0:i1, j0:j1] from its tail until none are left; ws.ap holds the rows of op(A).
func (j *job) takePanels(ws *workspace, tail *panelTail, i0, i1, j0, j1, pc, kb int) {
	nr := j.kern.nr
	for {
		jr := j0 + int(tail.next.Add(1)-1)*nr
		if jr >= j1 {
			return
		}
		// The kernel fetches the panel after this one, most likely this worker's next.
		if next := jr + nr; next < j1 {
			j.walkB(ws, pc, kb, next, min(nr, j1-next))
		} else {
			ws.walk.rows = 0
		}
		j.panel(ws, ws.ap, i0, i1, jr, min(nr, j1-jr), pc, kb)
	}
}

// block computes C[i0:i1, j0:j1]. For each kc block of K it packs the rows' strip of op(A)
// once (so the kernel reads it contiguously whatever A's layout and stride), then for each
// column panel packs op(B) and runs the kernel down the rows. Where the block of C is larger
// than L2 but the rows of op(A) fit in it packed whole (wholeC, wholeA), and K spans
// more than two kc blocks, it packs the rows all first and takes each panel through all of
// K, so that a panel of C stays in cache across kc blocks instead of the whole block of C
// being read and written once per kc block. Otherwise the panels of the last kc block are
// taken from the task's tail (panelTail), shared with workers that have run out of tasks.
func (j *job) block(ws *workspace, t, i0, i1, j0, j1 int) {
	kern := j.kern
	nr, kc := kern.nr, kern.kcBlock()
	pad := (i1 - i0 + kern.mr - 1) / kern.mr * kern.mr
	if j.k > 2*kc && pad*j.k <= wholeA && (i1-i0)*(j1-j0) > wholeC {
		ws.fit(wholeA, kc)
		ws.packed = packedRows{}
		for pc := 0; pc < j.k; pc += kc {
			j.packABlock(ws.ap[pad*pc:], i0, i1, pc, min(kc, j.k-pc))
		}
		for jr := j0; jr < j1; jr += nr {
			for pc := 0; pc < j.k; pc += kc {
				kb := min(kc, j.k-pc)
				// The kernel fetches the next kc block of this panel's op(B), or the next
				// panel's first.
				if next := pc + kb; next < j.k {
					j.walkB(ws, next, min(kc, j.k-next), jr, min(nr, j1-jr))
				} else {
					j.walkB(ws, 0, min(kc, j.k), jr+nr, min(nr, j1-jr-nr))
				}
				j.panel(ws, ws.ap[pad*pc:], i0, i1, jr, min(nr, j1-jr), pc, kb)
			}
		}
		return
	}
	ws.fit(kc*maxMC, kc)
	for pc := 0; pc < j.k; pc += kc {
		kb := min(kc, j.k-pc)
		j.packABlock(ws.ap, i0, i1, pc, kb)
		ws.packed = packedRows{j.seq, i0, i1, pc}
		if pc+kb == j.k && len(j.tails) > 0 {
			j.tails[t].open.Store(true)
			if tailOpened != nil {
				tailOpened(j, t)
			}
			j.takePanels(ws, &j.tails[t], i0, i1, j0, j1, pc, kb)
			return
		}
		panels := (j1 - j0 + nr - 1) / nr
		nextPC := pc + kb
		nextKB := min(kc, j.k-nextPC)
		for jr := j0; jr < j1; jr += nr {
			// While the kernel runs down this panel it fetches the next panel of op(B), or the
			// next kc block's first one. The next kc block's rows of op(A) come in bursts, a
			// part per panel: the rows of a non-transposed A are far apart, too many streams
			// for the hardware prefetcher.
			if next := jr + nr; next < j1 {
				j.walkB(ws, pc, kb, next, min(nr, j1-next))
			} else {
				j.walkB(ws, nextPC, nextKB, j0, min(nr, j1-j0))
			}
			if nextKB > 0 {
				prefetchOp(j.a, j.lda, j.transA, i0, i1-i0, nextPC, nextKB, (jr-j0)/nr, panels)
			}
			j.panel(ws, ws.ap, i0, i1, jr, min(nr, j1-jr), pc, kb)
		}
	}
}

// walkB points the prefetch walk at op(B)[pc:pc+kb, jc:jc+cols], or ends it where that is
// empty or B is bfloat16 (the walk reads float32 operands).
func (j *job) walkB(ws *workspace, pc, kb, jc, cols int) {
	if j.bh != nil || kb <= 0 || cols <= 0 {
		ws.walk.rows = 0
		return
	}
	ws.walk.start(j.b, j.ldb, j.transB, pc, kb, jc, cols)
}

// wholeA is the most floats of op(A)'s rows that block packs whole, for all of K, and
// wholeC the fewest of a block of C that it takes panel by panel: 768 KiB, three quarters
// of L2. On 2 threads the AVX-512 kernel's wide products with K = 768 (256 rows against
// 2304, 3072 or 50304 columns, five kc blocks), whose blocks of C do not fit in L2, took 12%
// less CPU time in total (4-17% per product) taking each panel through all of K;
// 256x768x768, whose block of C fits, ran up to 10% slower (the packed rows crowd L2); with
// two kc blocks (the AVX2 kernel's K = 768, AVX-512's K = 256) it made no difference beyond
// the noise. wholeC is a variable so that tests can take small products panel by panel.
const wholeA = 3 << 16

var wholeC = wholeA

// packABlock packs rows i0..i1 of op(A)[:, pc:pc+kb] into dst, strip by strip.
func (j *job) packABlock(dst []float32, i0, i1, pc, kb int) {
	mr := j.kern.mr
	for ir := i0; ir < i1; ir += mr {
		d := dst[(ir-i0)*kb : (ir-i0+mr)*kb]
		if mrr := min(mr, i1-ir); mrr < mr {
			packAEdge(d, j.a, j.lda, j.transA, ir, mrr, mr, pc, kb)
		} else {
			packA(d, j.a, j.lda, j.transA, ir, mr, pc, kb)
		}
		if j.prec != tensor.FP32 {
			roundOperand(d, j.prec) // while the strip is in L1, rather than in another pass
		}
	}
}

// panel packs op(B)[pc:pc+kb, jr:jr+nrr] and adds its product with rows i0..i1 of op(A),
// packed in ap, into C (C = alpha*product + beta*C on the first kc block, + C after). The
// prefetch walk is set by the caller.
func (j *job) panel(ws *workspace, ap []float32, i0, i1, jr, nrr, pc, kb int) {
	kern := j.kern
	mr, nr := kern.mr, kern.nr
	beta := j.beta
	if pc > 0 {
		beta = 1
	}
	if j.bh != nil {
		packBHalves(ws.bp[:kb*nr], j.bh, j.ldb, pc, kb, jr, nrr, nr) // already bfloat16
	} else {
		packB(ws.bp[:kb*nr], j.b, j.ldb, j.transB, pc, kb, jr, nrr, nr)
		if j.prec != tensor.FP32 {
			roundOperand(ws.bp[:kb*nr], j.prec)
		}
	}
	full := 0 // whole tiles, computed in place by one kernel call
	if nrr == nr {
		full = (i1 - i0) / mr
	}
	if full > 0 {
		if pc == 0 && j.bias != nil {
			j.setBias(i0, i0+full*mr, jr, jr+nr)
		}
		kern.fn(kb, &ap[0], &ws.bp[0], &j.c[i0*j.ldc+jr], j.ldc, j.alpha, beta, full, &ws.walk)
	}
	// Edge tiles: compute the full tile into scratch, then merge the valid part.
	for ir := i0 + full*mr; ir < i1; ir += mr {
		mrr := min(mr, i1-ir)
		if pc == 0 && j.bias != nil {
			j.setBias(ir, ir+mrr, jr, jr+nrr)
		}
		if nrr == nr && mrr == kern.edgeRows {
			kern.edge(kb, &ap[(ir-i0)*kb], &ws.bp[0], &j.c[ir*j.ldc+jr], j.ldc, j.alpha, beta, 1, &ws.walk)
			continue
		}
		kern.fn(kb, &ap[(ir-i0)*kb], &ws.bp[0], &ws.tile[0], nr, j.alpha, 0, 1, &ws.walk)
		for i := 0; i < mrr; i++ {
			src := ws.tile[i*nr : i*nr+nrr]
			dst := j.c[(ir+i)*j.ldc+jr : (ir+i)*j.ldc+jr+nrr]
			if beta == 0 {
				copy(dst, src)
			} else {
				for x, v := range src {
					dst[x] = v + beta*dst[x]
				}
			}
		}
	}
	ws.walk.finish()
}

// packB writes op(B)[pc:pc+kb, jr:jr+nrr] into dst as kb rows of nr values, zero-padding
// columns nrr..nr.
func packB(dst, b []float32, ldb int, transB bool, pc, kb, jr, nrr, nr int) {
	if !transB {
		if nrr == nr && packBRows(dst, b, ldb, pc, kb, jr, nr) {
			return
		}
		for p := 0; p < kb; p++ {
			row := dst[p*nr : p*nr+nr]
			off := (pc+p)*ldb + jr
			copy(row, b[off:off+nrr])
			clear(row[nrr:])
		}
		return
	}
	if nrr == nr && packBT(dst, b, ldb, pc, kb, jr, nr) {
		return
	}
	for jj := 0; jj < nrr; jj++ {
		off := (jr+jj)*ldb + pc
		src := b[off : off+kb]
		d := dst[jj:]
		for p, v := range src {
			d[p*nr] = v
		}
	}
	if nrr < nr {
		for p := 0; p < kb; p++ {
			clear(dst[p*nr+nrr : p*nr+nr])
		}
	}
}

// packBHalves is packB for B given as bfloat16 bits, transposed (stored (n,k)), widening
// each value to float32.
func packBHalves(dst []float32, b []uint16, ldb, pc, kb, jr, nrr, nr int) {
	for jj := 0; jj < nrr; jj++ {
		off := (jr+jj)*ldb + pc
		src := b[off : off+kb]
		d := dst[jj:]
		for p, h := range src {
			d[p*nr] = math.Float32frombits(uint32(h) << 16)
		}
	}
	if nrr < nr {
		for p := 0; p < kb; p++ {
			clear(dst[p*nr+nrr : p*nr+nr])
		}
	}
}

// packA writes rows ir..ir+mr of op(A)[:, pc:pc+kb] into dst as kb groups of mr values.
func packA(dst, a []float32, lda int, transA bool, ir, mr, pc, kb int) {
	if packAStrip(dst, a, lda, transA, ir, mr, pc, kb) {
		return
	}
	packAEdge(dst, a, lda, transA, ir, mr, mr, pc, kb)
}

// packAEdge writes rows ir..ir+mrr of op(A)[:, pc:pc+kb] into dst as kb groups of mr values
// (row stride 1, k stride mr), zero-padding rows mrr..mr, for the last partial strip of rows.
func packAEdge(dst, a []float32, lda int, transA bool, ir, mrr, mr, pc, kb int) {
	for p := 0; p < kb; p++ {
		g := dst[p*mr : p*mr+mr]
		for i := 0; i < mrr; i++ {
			if transA {
				g[i] = a[(pc+p)*lda+ir+i]
			} else {
				g[i] = a[(ir+i)*lda+pc+p]
			}
		}
		clear(g[mrr:])
	}
}

// workspace holds one goroutine's packing buffers, reused across calls.
type workspace struct {
	bp   []float32 // packed B panel, kc*maxNR
	ap   []float32 // packed A rows of one task, kc*maxMC or wholeA
	tile []float32 // edge tile scratch, maxMR*maxNR
	walk prefetchWalk
	// packed names the rows of op(A) in ap, for a worker taking another task's panels.
	packed packedRows
	// arows holds op(A)'s rows gathered from a transposed A (or rounded) for dotBlock, and
	// brows four rounded rows of B, grown on demand; rows and out are dotBlock's row slices
	// and kernel output.
	arows []float32
	brows []float32
	rows  [dotMaxRows + 3][]float32
	out   [16]float32
}

// packedRows is the last kc block's rows of op(A) packed in a workspace: job.seq, rows
// i0..i1, from column pc; seq 0 is none.
type packedRows struct {
	seq        uint64
	i0, i1, pc int
}

// fit makes the packing buffers hold n floats of packed op(A) and a panel of op(B) kc steps
// deep.
func (ws *workspace) fit(n, kc int) {
	if len(ws.ap) < n {
		ws.ap = make([]float32, n)
	}
	if len(ws.bp) < kc*maxNR {
		ws.bp = make([]float32, kc*maxNR)
	}
}

func newWorkspace() *workspace {
	return &workspace{tile: make([]float32, maxMR*maxNR)}
}

// roundOperand rounds packed operand values in place to p's 16-bit format, as
// tensor.RoundBfloat16 and tensor.RoundFloat16 do; FP32 leaves them. Vector code takes whole
// groups of 8 where there is some (roundVector). For the rest the common cases are written out
// so they inline: finite values for bfloat16, and zeros and binary16's normal range for
// binary16, whose other values (subnormal, overflowing, NaN) take the full function.
func roundOperand(s []float32, p tensor.Precision) {
	if p == tensor.FP32 {
		return
	}
	s = s[roundVector(s, p):]
	switch p {
	case tensor.BF16:
		for i, v := range s {
			b := math.Float32bits(v)
			if b&0x7fffffff < 0x7f800000 {
				s[i] = math.Float32frombits((b + 0x7fff + (b>>16)&1) &^ 0xffff)
			} else {
				s[i] = tensor.RoundBfloat16(v)
			}
		}
	case tensor.FP16:
		for i, v := range s {
			b := math.Float32bits(v)
			// Magnitudes in [2^-14, 65520): unsigned, those below 2^-14 wrap to large values.
			if b&0x7fffffff-0x38800000 < 0x477ff000-0x38800000 {
				s[i] = math.Float32frombits((b + 0xfff + (b>>13)&1) &^ 0x1fff)
			} else if b&0x7fffffff != 0 {
				s[i] = tensor.RoundFloat16(v)
			}
		}
	}
}
