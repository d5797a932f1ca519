package cpu

import "github.com/vkgrad/vkgrad/tensor"

// lnJob runs LayerNorm forward or the dinp part of the backward over chunks of rows.
type lnJob struct {
	backward          bool
	N, C, rows        int
	out, inp, w, bias []float32
	mean, rstd        []float32
	dinp, dout        []float32
}

func (j *lnJob) run(_, c int) {
	lo := c * j.rows
	hi := min(lo+j.rows, j.N)
	C := j.C
	r := lo
	if !j.backward {
		// Four rows at a time: independent sums, each in llm.c's order.
		for ; r+4 <= hi; r += 4 {
			lnForward4(j.out[r*C:(r+4)*C], j.inp[r*C:(r+4)*C], j.w, j.bias, j.mean[r:r+4], j.rstd[r:r+4])
		}
	}
	for ; r < hi; r++ {
		x := j.inp[r*C : (r+1)*C]
		if j.backward {
			lnBackwardRow(j.dinp[r*C:(r+1)*C], j.dout[r*C:(r+1)*C], x, j.w, j.mean[r], j.rstd[r])
		} else {
			j.mean[r], j.rstd[r] = lnForwardRow(j.out[r*C:(r+1)*C], x, j.w, j.bias)
		}
	}
}

// lnForwardRow follows llm.c's layernorm_forward: float32 sums, biased variance, eps 1e-5.
func lnForwardRow(out, x, w, bias []float32) (float32, float32) {
	C := len(x)
	out, w, bias = out[:C], w[:C], bias[:C]
	var m float32
	for _, v := range x {
		m += v
	}
	m /= float32(C)
	var v float32
	for _, xi := range x {
		d := xi - m
		v += d * d
	}
	v /= float32(C)
	s := 1 / sqrtf(v+1e-5)
	for i, xi := range x {
		out[i] = (s*(xi-m))*w[i] + bias[i]
	}
	return m, s
}

// lnForward4 is lnForwardRow on four consecutive rows with their sums interleaved.
func lnForward4(out, x, w, bias, mean, rstd []float32) {
	C := len(w)
	x0, x1, x2, x3 := x[:C], x[C:2*C], x[2*C:3*C], x[3*C:4*C]
	x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
	var m0, m1, m2, m3 float32
	for i, v := range x0 {
		m0 += v
		m1 += x1[i]
		m2 += x2[i]
		m3 += x3[i]
	}
	n := float32(C)
	m0, m1, m2, m3 = m0/n, m1/n, m2/n, m3/n
	var v0, v1, v2, v3 float32
	for i, v := range x0 {
		d0, d1, d2, d3 := v-m0, x1[i]-m1, x2[i]-m2, x3[i]-m3
		v0 += d0 * d0
		v1 += d1 * d1
		v2 += d2 * d2
		v3 += d3 * d3
	}
	s0, s1, s2, s3 := 1/sqrtf(v0/n+1e-5), 1/sqrtf(v1/n+1e-5), 1/sqrtf(v2/n+1e-5), 1/sqrtf(v3/n+1e-5)
	ms, ss := [4]float32{m0, m1, m2, m3}, [4]float32{s0, s1, s2, s3}
	for k := range 4 {
		o, xr := out[k*C:(k+1)*C], x[k*C:(k+1)*C]
		o, xr, b := o[:len(w)], xr[:len(w)], bias[:len(w)]
		m, s := ms[k], ss[k]
		for i, xi := range xr {
			o[i] = (s*(xi-m))*w[i] + b[i]
		}
		mean[k], rstd[k] = m, s
	}
}

// lnBackwardRow accumulates the input gradient of one row (llm.c's layernorm_backward).
func lnBackwardRow(dinp, dout, x, w []float32, m, s float32) {
	C := len(x)
	dinp, dout, w = dinp[:C], dout[:C], w[:C]
	var dnormMean, dnormNormMean float32
	for i, xi := range x {
		norm := (xi - m) * s
		dn := w[i] * dout[i]
		dnormMean += dn
		dnormNormMean += dn * norm
	}
	dnormMean /= float32(C)
	dnormNormMean /= float32(C)
	for i, xi := range x {
		norm := (xi - m) * s
		dn := w[i] * dout[i]
		dval := dn
		dval -= dnormMean
		dval -= norm * dnormNormMean
		dval *= s
		dinp[i] += dval
	}
}

// LayerNormForward implements tensor.Backend.
func (b *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias *tensor.Tensor, N, C int) {
	defer b.unlock(b.lock("LayerNormForward"))
	const op = "LayerNormForward"
	dims(op, N, C)
	b.ln = lnJob{N: N, C: C, rows: rowsPer(3 * C),
		out: f32(op, "out", out, N*C), inp: f32(op, "inp", inp, N*C),
		w: f32(op, "weight", weight, C), bias: f32(op, "bias", bias, C),
		mean: f32(op, "mean", mean, N), rstd: f32(op, "rstd", rstd, N)}
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
