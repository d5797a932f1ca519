package cpu

import (
	"fmt"
	"runtime"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

var _ tensor.HalfWeightMatMuler = (*Backend)(nil)

// halfWeight is the CPU's tensor.HalfWeight: the bfloat16 bits of a (rows, cols) matrix.
type halfWeight struct {
	be         *Backend
	rows, cols int
	bits       []uint16
}

func (h *halfWeight) Shape() (rows, cols int) { return h.rows, h.cols }
func (h *halfWeight) Bytes() int64            { return 2 * int64(len(h.bits)) }
func (h *halfWeight) Free()                   { h.bits = nil }

// Refresh implements tensor.HalfWeight.
func (h *halfWeight) Refresh(w *tensor.Tensor) error {
	if h.bits == nil && h.rows*h.cols > 0 {
		return fmt.Errorf("cpu: refreshing a freed bfloat16 weight")
	}
	if len(w.Shape) != 2 || w.Shape[0] != h.rows || w.Shape[1] != h.cols {
		return fmt.Errorf("cpu: bfloat16 weight of shape (%d,%d) refreshed from a tensor of shape %v", h.rows, h.cols, w.Shape)
	}
	src, err := viewF32(w)
	if err != nil {
		return err
	}
	b := h.be
	defer b.unlock(b.lock("HalfWeightRefresh"))
	j := &roundJob{dst: h.bits, src: src}
	b.pool.do(j, ceilDiv(len(src), roundChunk))
	return nil
}

// roundChunk is the values a worker rounds at a time when a copy is refreshed.
const roundChunk = 1 << 16

// roundJob rounds a weight matrix into its bfloat16 copy, a chunk of values at a time.
type roundJob struct {
	dst []uint16
	src []float32
}

func (j *roundJob) run(_, c int) {
	lo := c * roundChunk
	hi := min(lo+roundChunk, len(j.src))
	gemm.BF16Bits(j.dst[lo:hi], j.src[lo:hi])
}

// NewHalfWeight implements tensor.HalfWeightMatMuler.
func (b *Backend) NewHalfWeight(w *tensor.Tensor) (tensor.HalfWeight, error) {
	if w == nil || len(w.Shape) != 2 {
		return nil, fmt.Errorf("cpu: a bfloat16 weight needs a matrix, not a tensor of shape %v", shapeOf(w))
	}
	h := &halfWeight{be: b, rows: w.Shape[0], cols: w.Shape[1], bits: make([]uint16, w.Shape[0]*w.Shape[1])}
	adviseHugePages(h.bits)
	if err := h.Refresh(w); err != nil {
		return nil, err
	}
	return h, nil
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// HalfWeightRows implements tensor.HalfWeightMatMuler: the rows package gemm computes as dot
// products reading bfloat16 B in place (gemm.BF16DotRows); 0 where its kernel has none
// (purego, arm64), so callers keep the float32 weights there.
func (b *Backend) HalfWeightRows() int { return gemm.BF16DotRows() }

// MatMulHalf implements tensor.HalfWeightMatMuler through gemm.SgemmBF16Threads, with
// MatMul's bias, Accumulate and GeluOut.
func (b *Backend) MatMulHalf(out, a *tensor.Tensor, w tensor.HalfWeight, bias *tensor.Tensor, p tensor.MatMulParams) {
	defer b.unlock(b.lockMatMul(p))
	h, ok := w.(*halfWeight)
	switch {
	case !ok || h.be != b:
		panic(fmt.Sprintf("cpu: MatMulHalf: %T is not a bfloat16 weight of this backend", w))
	case h.bits == nil && h.rows*h.cols > 0:
		panic("cpu: MatMulHalf: the bfloat16 weight has been freed")
	case !p.TransB || p.Batch > 1:
		panic(fmt.Sprintf("cpu: MatMulHalf: needs TransB and one matrix, got TransB=%v Batch=%d", p.TransB, p.Batch))
	case p.N != h.rows || p.K != h.cols:
		panic(fmt.Sprintf("cpu: MatMulHalf: N=%d K=%d, but the weight is %dx%d", p.N, p.K, h.rows, h.cols))
	}
	M, N, K := p.M, p.N, p.K
	dims("MatMulHalf", M, N, K)
	A := f32("MatMulHalf", "a", a, M*K)
	C := f32("MatMulHalf", "out", out, M*N)
	var bs []float32
	if bias != nil {
		bs = f32("MatMulHalf", "bias", bias, N)
	}
	lda := K
	if p.TransA {
		lda = M
	}
	threads := min(b.threads, runtime.GOMAXPROCS(0))
	switch {
	case M == 0 || N == 0:
	case K == 0:
		emptyProduct(C, bs, M, N, p.Accumulate)
	case p.Accumulate:
		gemm.SgemmBF16Threads(threads, p.TransA, M, N, K, 1, A, lda, h.bits, K, 1, C, N)
	case bs != nil:
		gemm.SgemmBiasBF16Threads(threads, p.TransA, M, N, K, 1, A, lda, h.bits, K, bs, C, N)
	default:
		gemm.SgemmBF16Threads(threads, p.TransA, M, N, K, 1, A, lda, h.bits, K, 0, C, N)
	}
	if p.Accumulate && bs != nil {
		addRows(C, bs, M, N)
	}
	if p.GeluOut != nil {
		n := M * N
		b.ew = ewJob{kind: ewGeluF, n: n, out: f32("MatMulHalf", "GeluOut", p.GeluOut, n), x: f32("MatMulHalf", "out", out, n)}
		b.runEW(n)
	}
}
