package cpu

// The row kernels of the Llama ops in portable Go. Each hands the leading part of its row to
// a vector kernel (llama_amd64.s, swiglu_amd64.s) where there is one, and finishes the rest
// here. The vector kernels compute the same bits: every product that feeds a sum is wrapped
// in float32() so no compiler fuses it into a multiply-add, and sums go over eight lanes
// (element i in lane i%8) in the order a vector register adds them.

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

// ropeRow rotates (or, backward, rotates back and accumulates) the first rotHeads heads of
// row r at its position and copies (or accumulates) the rest.
func ropeRow(j *llamaJob, r int) {
	D, half := j.C/j.H, j.C/j.H/2
	pos := j.pos0 + r%j.T
	cos, sin := j.table[pos*D:pos*D+half], j.table[pos*D+half:(pos+1)*D]
	row := r * j.C
	for h := 0; h < j.H; h++ {
		base := row + h*D
		if j.kind == ropeForward {
			x, o := j.inp[base:base+D], j.out[base:base+D]
			if h >= j.rotHeads {
				copy(o, x)
				continue
			}
			ropeRotate(o, x, cos, sin)
			continue
		}
		g, dx := j.dout[base:base+D], j.dinp[base:base+D]
		if h >= j.rotHeads {
			addTo(dx, g)
			continue
		}
		ropeRotateBack(dx, g, cos, sin)
	}
}

// ropeRotate writes one head x rotated by the angles whose cosines and sines are given: the
// pairs are (x_i, x_{i+D/2}).
func ropeRotate(o, x, cos, sin []float32) {
	half := len(cos)
	o, x, sin = o[:2*half], x[:2*half], sin[:half]
	for i := ropeVector(o, x, cos, sin); i < half; i++ {
		x0, x1 := x[i], x[i+half]
		o[i] = float32(x0*cos[i]) - float32(x1*sin[i])
		o[i+half] = float32(x1*cos[i]) + float32(x0*sin[i])
	}
}

// ropeRotateBack accumulates into dx the gradient g of one head rotated back.
func ropeRotateBack(dx, g, cos, sin []float32) {
	half := len(cos)
	dx, g, sin = dx[:2*half], g[:2*half], sin[:half]
	for i := ropeBackwardVector(dx, g, cos, sin); i < half; i++ {
		g0, g1 := g[i], g[i+half]
		dx[i] += float32(g0*cos[i]) + float32(g1*sin[i])
		dx[i+half] += float32(g1*cos[i]) - float32(g0*sin[i])
	}
}

// sigmoidf is 1/(1+e^-x) in float32 steps.
func sigmoidf(x float32) float32 { return 1 / (1 + expf32(-x)) }

// swigluRange writes silu(gate)·up.
func swigluRange(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	n := swigluVector(out, gate, up)
	swigluRangeGo(out[n:], gate[n:], up[n:])
}

func swigluRangeGo(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	for i, g := range gate {
		out[i] = float32(g*sigmoidf(g)) * up[i]
	}
}

// swigluBackwardRange accumulates the gradients of gate and up.
func swigluBackwardRange(dgate, dup, gate, up, dout []float32) {
	n := len(dout)
	dgate, dup, gate, up = dgate[:n], dup[:n], gate[:n], up[:n]
	v := swigluBackwardVector(dgate, dup, gate, up, dout)
	swigluBackwardRangeGo(dgate[v:], dup[v:], gate[v:], up[v:], dout[v:])
}

func swigluBackwardRangeGo(dgate, dup, gate, up, dout []float32) {
	n := len(dout)
	dgate, dup, gate, up = dgate[:n], dup[:n], gate[:n], up[:n]
	for i, g := range gate {
		sg := sigmoidf(g)
		dup[i] += float32(dout[i] * float32(g*sg))
		dgate[i] += float32(float32(dout[i]*up[i]) * float32(sg*(1+float32(g*(1-sg)))))
	}
}
