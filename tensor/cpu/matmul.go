package cpu

import (
	"fmt"
	"runtime"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

// MatMul implements tensor.Backend through gemm.SgemmPrecisionThreads on the backend's
// threads, or GOMAXPROCS where that is fewer: more goroutines than that could not run at once.
// Without Accumulate, a bias is written into each tile of out before the product is added to
// it, as llm.c starts each sum at the bias. GeluOut is GeluForward's kernel run over out
// afterwards. The operands are rounded to the product precision (SetProductPrecision); the
// bias, the accumulated out and GeluOut stay float32.
func (b *Backend) MatMul(out, a, bm, bias *tensor.Tensor, p tensor.MatMulParams) {
	defer b.unlock(b.lockMatMul(p))
	b.matMul(out, a, bm, bias, p)
	if p.GeluOut != nil {
		n := max(p.Batch, 1) * p.M * p.N
		b.ew = ewJob{kind: ewGeluF, n: n, out: f32("MatMul", "GeluOut", p.GeluOut, n), x: f32("MatMul", "out", out, n)}
		b.runEW(n)
	}
}

// matMul is MatMul's product.
func (b *Backend) matMul(out, a, bm, bias *tensor.Tensor, p tensor.MatMulParams) {
	M, N, K := p.M, p.N, p.K
	dims("MatMul", M, N, K, p.Batch)
	batch := max(p.Batch, 1)
	A := f32("MatMul", "a", a, batch*M*K)
	B := f32("MatMul", "b", bm, batch*K*N)
	C := f32("MatMul", "out", out, batch*M*N)
	var bs []float32
	if bias != nil {
		bs = f32("MatMul", "bias", bias, N)
	}
	lda, ldb := K, N
	if p.TransA {
		lda = M
	}
	if p.TransB {
		ldb = K
	}
	threads := min(b.threads, runtime.GOMAXPROCS(0))
	for z := 0; z < batch; z++ {
		c := C[z*M*N : (z+1)*M*N]
		az, bz := A[z*M*K:(z+1)*M*K], B[z*K*N:(z+1)*K*N]
		switch {
		case M == 0 || N == 0:
		case K == 0:
			emptyProduct(c, bs, M, N, p.Accumulate)
		case p.Accumulate:
			gemm.SgemmPrecisionThreads(threads, b.precision, p.TransA, p.TransB, M, N, K, 1, az, lda, bz, ldb, 1, c, N)
		case bs != nil:
			gemm.SgemmBiasPrecisionThreads(threads, b.precision, p.TransA, p.TransB, M, N, K, 1, az, lda, bz, ldb, bs, c, N)
		default:
			gemm.SgemmPrecisionThreads(threads, b.precision, p.TransA, p.TransB, M, N, K, 1, az, lda, bz, ldb, 0, c, N)
		}
		if p.Accumulate && bs != nil {
			addRows(c, bs, M, N)
		}
	}
}

// emptyProduct writes a product over K = 0, an empty sum, into c (M, N): the bias or zero,
// or nothing when accumulating.
func emptyProduct(c, bias []float32, M, N int, accumulate bool) {
	switch {
	case accumulate:
	case bias != nil:
		for i := 0; i < M; i++ {
			copy(c[i*N:(i+1)*N], bias)
		}
	default:
		clear(c)
	}
}

// addRows adds v (N values) to each of c's M rows: the bias of an accumulated product.
func addRows(c, v []float32, M, N int) {
	for i := 0; i < M; i++ {
		row := c[i*N : (i+1)*N]
		for j := range row {
			row[j] += v[j]
		}
	}
}

type colKind uint8

const (
	colBias colKind = iota
	colLayerNorm
	colEncoder
)

// colJob accumulates over rows into per-column results, each chunk owning colChunk columns and
// visiting rows in order: the same order of additions as llm.c's single-threaded loops.
type colJob struct {
	kind       colKind
	rows, C    int
	dout, inp  []float32
	mean, rstd []float32
	d1, d2     []float32 // dbias; dweight, dbias; dwte, dwpe
	tokens     []int32
	T          int
}

func (j *colJob) run(_, c int) {
	lo := c * colChunk
	hi := min(lo+colChunk, j.C)
	C := j.C
	switch j.kind {
	case colBias:
		colSum(j.d1[lo:hi], j.dout[lo:], j.rows, C)
	case colLayerNorm:
		lnColSums(j.d1[lo:hi], j.d2[lo:hi], j.inp[lo:], j.dout[lo:], j.mean, j.rstd, j.rows, C)
	case colEncoder:
		for r := 0; r < j.rows; r++ {
			ix := int(j.tokens[r])
			t := r % j.T
			d := j.dout[r*C+lo : r*C+hi]
			wte := j.d1[ix*C+lo : ix*C+hi]
			wpe := j.d2[t*C+lo : t*C+hi]
			wte, wpe = wte[:len(d)], wpe[:len(d)]
			for i := range d {
				wte[i] += d[i]
				wpe[i] += d[i]
			}
		}
	}
}

// BiasBackward implements tensor.Backend.
func (b *Backend) BiasBackward(dbias, dout *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("BiasBackward"))
	dims("BiasBackward", N, C)
	b.colj = colJob{kind: colBias, rows: N, C: C, d1: f32("BiasBackward", "dbias", dbias, C),
		dout: f32("BiasBackward", "dout", dout, N*C)}
	b.pool.do(&b.colj, ceilDiv(C, colChunk))
	b.colj = colJob{}
}

func checkTokens(op string, tok []int32, V int) {
	for i, t := range tok {
		if t < 0 || int(t) >= V {
			panic(fmt.Sprintf("cpu: %s: token %d at position %d outside [0,%d)", op, t, i, V))
		}
	}
}

var _ tensor.ProductRounder = (*Backend)(nil)

// SetProductPrecision implements tensor.ProductRounder: MatMul's operands are rounded to p's
// format from the next product on. Only MatMul rounds; attention's scores and weighted sums
// are llm.c's float32 loops, not products of package gemm, and stay float32 as the softmax
// between them does.
func (b *Backend) SetProductPrecision(p tensor.Precision) error {
	if p < tensor.FP32 || p > tensor.FP16 {
		return fmt.Errorf("cpu: unknown product precision %v", p)
	}
	b.mu.Lock()
	b.precision = p
	b.mu.Unlock()
	return nil
}

// ProductPrecision is the precision MatMul's operands are rounded to.
func (b *Backend) ProductPrecision() tensor.Precision {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.precision
}
