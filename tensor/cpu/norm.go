package cpu

import "github.com/vkgrad/vkgrad/tensor"

// norm_arm64.s's generator is named here, in a file every architecture builds, so that
// go generate on any machine rewrites it.
//
//go:generate go run norm_neon_gen.go

// lnJob runs LayerNorm forward or the dinp part of the backward over chunks of rows.
type lnJob struct {
	backward          bool
	N, C, rows        int
	out, inp, w, bias []float32
	mean, rstd        []float32
	dinp, dout        []float32
	addA, addB        []float32 // when set, each row of inp is first made as addA + addB
}

func (j *lnJob) run(_, c int) {
	lo := c * j.rows
	hi := min(lo+j.rows, j.N)
	C := j.C
	for r := lo; r < hi; r++ {
		x := j.inp[r*C : (r+1)*C]
		if j.addA != nil { // the residual add while the row is in cache
			a, b := j.addA[r*C:(r+1)*C], j.addB[r*C:(r+1)*C]
			for i := range x {
				x[i] = a[i] + b[i]
			}
		}
		if j.backward {
			lnBackwardRow(j.dinp[r*C:(r+1)*C], j.dout[r*C:(r+1)*C], x, j.w, j.mean[r], j.rstd[r])
		} else {
			j.mean[r], j.rstd[r] = lnForwardRow(j.out[r*C:(r+1)*C], x, j.w, j.bias)
		}
	}
}

// lanes8Sum adds eight lane sums in a fixed tree (the vector kernels' horizontal sum).
func lanes8Sum(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// lnForwardRowGo is llm.c's layernorm_forward for one row (biased variance, eps 1e-5) with its
// float32 sums split over eight lanes (element i in lane i%8), as the vector kernel does.
func lnForwardRowGo(out, x, w, bias []float32) (float32, float32) {
	C := len(x)
	out, w, bias = out[:C], w[:C], bias[:C]
	var acc [8]float32
	for i, v := range x {
		acc[i%8] += v
	}
	m := lanes8Sum(&acc) / float32(C)
	acc = [8]float32{}
	for i, xi := range x {
		d := xi - m
		acc[i%8] += float32(d * d)
	}
	v := lanes8Sum(&acc) / float32(C)
	s := 1 / sqrtf(v+1e-5)
	for i, xi := range x {
		out[i] = float32(float32(s*(xi-m))*w[i]) + bias[i]
	}
	return m, s
}

// lnBackwardRowGo accumulates the input gradient of one row (llm.c's layernorm_backward), with
// the two row sums split over eight lanes as in lnForwardRowGo.
func lnBackwardRowGo(dinp, dout, x, w []float32, m, s float32) {
	C := len(x)
	dinp, dout, w = dinp[:C], dout[:C], w[:C]
	var accMean, accNorm [8]float32
	for i, xi := range x {
		norm := float32((xi - m) * s)
		dn := float32(w[i] * dout[i])
		accMean[i%8] += dn
		accNorm[i%8] += float32(dn * norm)
	}
	dnormMean := lanes8Sum(&accMean) / float32(C)
	dnormNormMean := lanes8Sum(&accNorm) / float32(C)
	for i, xi := range x {
		norm := float32((xi - m) * s)
		dn := float32(w[i] * dout[i])
		dval := dn - dnormMean
		dval -= float32(norm * dnormNormMean)
		dval = float32(dval * s)
		dinp[i] += dval
	}
}

// LayerNormForward implements tensor.Backend.
func (b *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("LayerNormForward"))
	b.layerNormRows("LayerNormForward", "inp", out, mean, rstd, inp, nil, nil, weight, bias, N, C)
}

// ResidualLayerNormForward implements tensor.Backend.
func (b *Backend) ResidualLayerNormForward(residual, out, mean, rstd, x, y, weight, bias *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("ResidualLayerNormForward"))
	b.layerNormRows("ResidualLayerNormForward", "residual", out, mean, rstd, residual, x, y, weight, bias, N, C)
}

// layerNormRows normalises N rows of inp (named inpName), or, with x and y set, of inp = x + y
// made row by row while the row is in cache.
func (b *Backend) layerNormRows(op, inpName string, out, mean, rstd, inp, x, y, weight, bias *tensor.Tensor, N, C int) {
	dims(op, N, C)
	j := lnJob{N: N, C: C, rows: rowsPer(3 * C),
		out: f32(op, "out", out, N*C), inp: f32(op, inpName, inp, N*C),
		w: f32(op, "weight", weight, C), bias: f32(op, "bias", bias, C),
		mean: f32(op, "mean", mean, N), rstd: f32(op, "rstd", rstd, N)}
	if x != nil {
		j.rows, j.addA, j.addB = rowsPer(5*C), f32(op, "a", x, N*C), f32(op, "b", y, N*C)
	}
	b.ln = j
	if C > 0 {
		b.pool.do(&b.ln, ceilDiv(N, b.ln.rows))
	}
	b.ln = lnJob{}
}

// LayerNormBackward implements tensor.Backend. The input gradient is computed row-parallel;
// dweight and dbias column-parallel, each column summing rows in order as llm.c does.
func (b *Backend) LayerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("LayerNormBackward"))
	const op = "LayerNormBackward"
	dims(op, N, C)
	b.ln = lnJob{backward: true, N: N, C: C, rows: rowsPer(4 * C),
		dinp: f32(op, "dinp", dinp, N*C), dout: f32(op, "dout", dout, N*C), inp: f32(op, "inp", inp, N*C),
		w: f32(op, "weight", weight, C), mean: f32(op, "mean", mean, N), rstd: f32(op, "rstd", rstd, N)}
	if C > 0 {
		b.pool.do(&b.ln, ceilDiv(N, b.ln.rows))
	}
	b.colj = colJob{kind: colLayerNorm, rows: N, C: C, dout: b.ln.dout, inp: b.ln.inp,
		mean: b.ln.mean, rstd: b.ln.rstd, d1: f32(op, "dweight", dweight, C), d2: f32(op, "dbias", dbias, C)}
	b.pool.do(&b.colj, ceilDiv(C, colChunk))
	b.ln = lnJob{}
	b.colj = colJob{}
}

// rmsNormRow writes w * x * rstd, rstd = 1/sqrt(mean(x²) + eps), and returns rstd.
func rmsNormRow(out, x, w []float32, eps float32) float32 {
	out, w = out[:len(x)], w[:len(x)]
	var acc [8]float32
	for i := rmsSumSquaresVector(x, &acc); i < len(x); i++ {
		acc[i%8] += float32(x[i] * x[i])
	}
	s := 1 / sqrtf(lanes8Sum(&acc)/float32(len(x))+eps)
	for i := rmsScaleVector(out, x, w, s); i < len(x); i++ {
		out[i] = w[i] * float32(x[i]*s)
	}
	return s
}

// rmsNormBackwardRow accumulates the input gradient of one row:
// dx_i += s·w_i·g_i − x_i·s³·mean_j(g_j·w_j·x_j).
func rmsNormBackwardRow(dinp, dout, x, w []float32, s float32) {
	dinp, dout, w = dinp[:len(x)], dout[:len(x)], w[:len(x)]
	var acc [8]float32
	for i := rmsDot3Vector(dout, w, x, &acc); i < len(x); i++ {
		acc[i%8] += float32(float32(dout[i]*w[i]) * x[i])
	}
	k := lanes8Sum(&acc) / float32(len(x)) * s * s * s
	for i := rmsBackwardApplyVector(dinp, dout, x, w, s, k); i < len(x); i++ {
		dinp[i] += float32(float32(s*w[i])*dout[i]) - float32(x[i]*k)
	}
}

// rmsWeightGrad accumulates dw[c] += sum over rows, in order, of dout·x·rstd for columns lo..hi.
func rmsWeightGrad(j *llamaJob, lo, hi int) {
	lo += rmsWeightColsVector(j.dw[lo:hi], j.dout[lo:], j.inp[lo:], j.rstd[:j.n], j.C)
	if lo == hi {
		return
	}
	dw := j.dw[lo:hi]
	for r := 0; r < j.n; r++ {
		s := j.rstd[r]
		d, x := j.dout[r*j.C+lo:r*j.C+hi], j.inp[r*j.C+lo:r*j.C+hi]
		for i := range dw {
			dw[i] += float32(d[i] * float32(x[i]*s))
		}
	}
}

// RMSNormForward implements tensor.Backend.
func (b *Backend) RMSNormForward(out, rstd, inp, weight *tensor.Tensor, N, C int, eps float32) {
	defer b.unlock(b.lock("RMSNormForward"))
	b.rmsNormRows("RMSNormForward", "inp", out, rstd, inp, nil, nil, weight, N, C, eps)
}

// ResidualRMSNormForward implements tensor.Backend.
func (b *Backend) ResidualRMSNormForward(residual, out, rstd, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	defer b.unlock(b.lock("ResidualRMSNormForward"))
	b.rmsNormRows("ResidualRMSNormForward", "residual", out, rstd, residual, x, y, weight, N, C, eps)
}

// rmsNormRows normalises N rows of inp (named inpName), or, with x and y set, of inp = x + y
// made row by row while the row is in cache.
func (b *Backend) rmsNormRows(op, inpName string, out, rstd, inp, x, y, weight *tensor.Tensor, N, C int, eps float32) {
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	b.llama = llamaJob{kind: rmsForward, n: N, C: C, rows: rowsPer(2 * C), eps: eps,
		out: f32(op, "out", out, N*C), inp: f32(op, inpName, inp, N*C), w: f32(op, "weight", weight, C), rstd: f32(op, "rstd", rstd, N)}
	if x != nil {
		b.llama.rows, b.llama.addA, b.llama.addB = rowsPer(4*C), f32(op, "a", x, N*C), f32(op, "b", y, N*C)
	}
	b.runLlama(true)
}

// RMSNormBackward implements tensor.Backend.
func (b *Backend) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("RMSNormBackward"))
	const op = "RMSNormBackward"
	dims(op, N, C)
	if N*C == 0 {
		return
	}
	j := llamaJob{kind: rmsBackwardInput, n: N, C: C, rows: rowsPer(3 * C),
		dinp: f32(op, "dinp", dinp, N*C), dout: f32(op, "dout", dout, N*C), inp: f32(op, "inp", inp, N*C),
		w: f32(op, "weight", weight, C), rstd: f32(op, "rstd", rstd, N)}
	b.llama = j
	b.runLlama(true)
	if dweight == nil {
		return
	}
	j.kind, j.dw = rmsBackwardWeight, f32(op, "dweight", dweight, C)
	b.llama = j
	b.runLlama(false)
}
