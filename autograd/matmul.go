package autograd

import "github.com/vkgrad/vkgrad/tensor"

// MatMul sets out = op(a) @ op(b) (+ bias); see tensor.Backend.MatMul. bias may be nil.
func MatMul(t *Tape, out, a, b, bias *Var, p tensor.MatMulParams) {
	if p.Accumulate || p.GeluOut != nil {
		panic("autograd: MatMul records an overwriting product; Accumulate and GeluOut are not allowed (see MatMulGelu)")
	}
	backendOf(out).MatMul(out.Value, a.Value, b.Value, value(bias), p)
	if t.Recording() {
		t.push(node{overwrites: true, backward: matmulBackward, vars: [6]*Var{out, a, b, bias}, mm: p})
	}
}

// MatMulGelu sets out = op(a) @ op(b) (+ bias) and gelu = GELU(out) in one backend call (see
// tensor.MatMulParams.GeluOut). The tape records MatMul's and Gelu's nodes, so the backward
// runs GELU's and then the product's, with the separate ops' bits.
func MatMulGelu(t *Tape, out, gelu, a, b, bias *Var, p tensor.MatMulParams) {
	if p.Accumulate || p.GeluOut != nil {
		panic("autograd: MatMulGelu records an overwriting product into its own gelu; Accumulate and GeluOut are not allowed")
	}
	if gelu == out {
		panic("autograd: MatMulGelu's gelu must be a new Var: out is kept for GELU's backward")
	}
	mm := p
	mm.GeluOut = gelu.Value
	backendOf(out).MatMul(out.Value, a.Value, b.Value, value(bias), mm)
	if t.Recording() {
		t.push(node{overwrites: true, backward: matmulBackward, vars: [6]*Var{out, a, b, bias}, mm: p})
		t.push(node{backward: geluBackward, vars: [6]*Var{gelu, out}})
	}
}

// MatMulAdd adds op(a) @ op(b) to out, which already holds another term (a LoRA adapter's
// product added to its base layer's, say). The backward is MatMul's: out's gradient flows to
// a and b as if the product stood alone.
func MatMulAdd(t *Tape, out, a, b *Var, p tensor.MatMulParams) {
	if p.GeluOut != nil {
		panic("autograd: MatMulAdd records no GELU; GeluOut is not allowed")
	}
	p.Accumulate = true
	backendOf(out).MatMul(out.Value, a.Value, b.Value, nil, p)
	if t.Recording() {
		p.Accumulate = false
		t.push(node{overwrites: true, backward: matmulBackward, vars: [6]*Var{out, a, b}, mm: p})
	}
}

func matmulBackward(n *node) {
	out, a, b, bias, p := n.vars[0], n.vars[1], n.vars[2], n.vars[3], n.mm
	if out.Grad == nil {
		return
	}
	out.SettleGrad() // read as dC
	be := backendOf(out)
	dC := out.Grad
	// A gradient marked zero is overwritten by its product (Accumulate false) instead.
	if a.Grad != nil {
		acc := !a.TakeGradZero()
		if !p.TransA { // dA = dC @ op(B)^T
			be.MatMul(a.Grad, dC, b.Value, nil, tensor.MatMulParams{M: p.M, N: p.K, K: p.N, TransB: !p.TransB, Accumulate: acc, Batch: p.Batch})
		} else { // stored A is (K,M): dA = op(B) @ dC^T
			be.MatMul(a.Grad, b.Value, dC, nil, tensor.MatMulParams{M: p.K, N: p.M, K: p.N, TransA: p.TransB, TransB: true, Accumulate: acc, Batch: p.Batch})
		}
	}
	if b.Grad != nil {
		acc := !b.TakeGradZero()
		if !p.TransB { // dB = op(A)^T @ dC
			be.MatMul(b.Grad, a.Value, dC, nil, tensor.MatMulParams{M: p.K, N: p.N, K: p.M, TransA: !p.TransA, Accumulate: acc, Batch: p.Batch})
		} else { // stored B is (N,K): dB = dC^T @ op(A)
			be.MatMul(b.Grad, dC, a.Value, nil, tensor.MatMulParams{M: p.N, N: p.K, K: p.M, TransA: true, TransB: p.TransA, Accumulate: acc, Batch: p.Batch})
		}
	}
	if bias != nil && bias.Grad != nil {
		bias.SettleGrad() // BiasBackward only adds
		be.BiasBackward(bias.Grad, dC, p.M*max(p.Batch, 1), p.N)
	}
}
