package cpu

// The row ops of the Llama family run as one llamaJob: RMSNorm (norm.go), rotary embeddings
// (rope.go), the SiLU-gated MLP activation (swiglu.go), a token embedding without positions
// (embedding.go) and the packing of q, k and v (attention.go). Each runs over fixed chunks of
// rows (or columns, for reductions over rows), so results never depend on the thread count.

// Their row kernels are portable Go. Each hands the leading part of its row to a vector kernel
// (norm_amd64.s, rope_amd64.s, swiglu_amd64.s) where there is one, and finishes the rest
// itself. The vector kernels compute the same bits: every product that feeds a sum is wrapped
// in float32() so no compiler fuses it into a multiply-add, and sums go over eight lanes
// (element i in lane i%8) in the order a vector register adds them.

// llamaKind selects what a llamaJob computes.
type llamaKind int

const (
	rmsForward llamaKind = iota
	rmsBackwardInput
	rmsBackwardWeight
	ropeForward
	ropeBackward
	swigluForward
	swigluBackward
	embedForward
	embedBackward
	packForward
	packBackward
)

// llamaJob holds one op's operands; rows are of width C (RMSNorm, embedding), H heads of D
// (RoPE); SwiGLU runs over flat chunks of elements.
type llamaJob struct {
	kind                 llamaKind
	n, C, rows           int
	eps                  float32
	out, inp, w, rstd    []float32
	dinp, dout, dw       []float32
	table                []float32 // RoPE: per position, D/2 cosines then D/2 sines
	T, pos0, H, rotHeads int
	tokens               []int32
	q, k, v, dq, dk, dv  []float32 // PackQKV
	KV, D                int
	addA, addB           []float32 // rmsForward: when set, each row of inp is first addA + addB
}

func (j *llamaJob) run(_, c int) {
	if j.kind == rmsBackwardWeight || j.kind == embedBackward {
		lo, hi := c*colChunk, min((c+1)*colChunk, j.C)
		if j.kind == rmsBackwardWeight {
			rmsWeightGrad(j, lo, hi)
		} else {
			embedGrad(j, lo, hi)
		}
		return
	}
	lo, hi := c*j.rows, min((c+1)*j.rows, j.n)
	switch j.kind {
	case swigluForward:
		swigluRange(j.out[lo:hi], j.inp[lo:hi], j.w[lo:hi])
		return
	case swigluBackward:
		swigluBackwardRange(j.dinp[lo:hi], j.dw[lo:hi], j.inp[lo:hi], j.w[lo:hi], j.dout[lo:hi])
		return
	}
	for r := lo; r < hi; r++ {
		switch j.kind {
		case rmsForward:
			if j.addA != nil { // the residual add while the row is in cache
				x, a, b := j.inp[r*j.C:(r+1)*j.C], j.addA[r*j.C:(r+1)*j.C], j.addB[r*j.C:(r+1)*j.C]
				for i := range x {
					x[i] = a[i] + b[i]
				}
			}
			j.rstd[r] = rmsNormRow(j.out[r*j.C:(r+1)*j.C], j.inp[r*j.C:(r+1)*j.C], j.w, j.eps)
		case rmsBackwardInput:
			rmsNormBackwardRow(j.dinp[r*j.C:(r+1)*j.C], j.dout[r*j.C:(r+1)*j.C], j.inp[r*j.C:(r+1)*j.C], j.w, j.rstd[r])
		case ropeForward, ropeBackward:
			ropeRow(j, r)
		case packForward:
			packRow(j, r)
		case packBackward:
			unpackRow(j, r)
		case embedForward:
			ix := int(j.tokens[r])
			copy(j.out[r*j.C:(r+1)*j.C], j.w[ix*j.C:(ix+1)*j.C])
		}
	}
}

func (b *Backend) runLlama(rows bool) {
	if rows {
		b.pool.do(&b.llama, ceilDiv(b.llama.n, b.llama.rows))
	} else {
		b.pool.do(&b.llama, ceilDiv(b.llama.C, colChunk))
	}
	b.llama = llamaJob{}
}
