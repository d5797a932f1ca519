package autograd

import "github.com/vkgrad/vkgrad/tensor"

// LayerNorm normalises N rows of C values; mean and rstd (N each) are saved for the backward.
func LayerNorm(t *Tape, out *Var, mean, rstd *tensor.Tensor, inp, weight, bias *Var, N, C int) {
	backendOf(out).LayerNormForward(out.Value, mean, rstd, inp.Value, weight.Value, bias.Value, N, C)
	if t.Recording() {
		t.push(node{backward: layerNormBackward, vars: [6]*Var{out, inp, weight, bias}, ts: [3]*tensor.Tensor{mean, rstd}, ints: [6]int{N, C}})
	}
}

// ResidualLayerNorm is Add(residual, a, b) followed by LayerNorm of residual, run as one
// kernel (llm.c's fused residual forward); the tape records the two ops, so the backward is
// theirs.
func ResidualLayerNorm(t *Tape, residual, a, b *Var, out *Var, mean, rstd *tensor.Tensor, weight, bias *Var, N, C int) {
	if residual == a || residual == b {
		panic("autograd: ResidualLayerNorm's residual must be a new Var, not one of its inputs")
	}
	backendOf(out).ResidualLayerNormForward(residual.Value, out.Value, mean, rstd, a.Value, b.Value, weight.Value, bias.Value, N, C)
	if t.Recording() {
		t.push(node{backward: addBackward, vars: [6]*Var{residual, a, b}})
		t.push(node{backward: layerNormBackward, vars: [6]*Var{out, residual, weight, bias}, ts: [3]*tensor.Tensor{mean, rstd}, ints: [6]int{N, C}})
	}
}

func layerNormBackward(n *node) {
	out, inp, w, b := n.vars[0], n.vars[1], n.vars[2], n.vars[3]
	if out.Grad == nil {
		return
	}
	if inp.Grad == nil || w.Grad == nil || b.Grad == nil {
		panic("autograd: LayerNorm backward needs gradients for input, weight and bias")
	}
	backendOf(out).LayerNormBackward(inp.Grad, w.Grad, b.Grad, out.Grad, inp.Value, w.Value, n.ts[0], n.ts[1], n.ints[0], n.ints[1])
}

// RMSNorm normalises N rows of C values with weight; rstd (N) is saved for the backward.
func RMSNorm(t *Tape, out *Var, rstd *tensor.Tensor, inp, weight *Var, N, C int, eps float32) {
	backendOf(out).RMSNormForward(out.Value, rstd, inp.Value, weight.Value, N, C, eps)
	if t.Recording() {
		t.push(node{backward: rmsNormBackward, vars: [6]*Var{out, inp, weight}, ts: [3]*tensor.Tensor{rstd}, ints: [6]int{N, C}})
	}
}

// ResidualRMSNorm is Add(residual, a, b) followed by RMSNorm of residual, run as one kernel;
// the tape records the two ops, so the backward is theirs.
func ResidualRMSNorm(t *Tape, residual, a, b, out *Var, rstd *tensor.Tensor, weight *Var, N, C int, eps float32) {
	if residual == a || residual == b {
		panic("autograd: ResidualRMSNorm's residual must be a new Var, not one of its inputs")
	}
	backendOf(out).ResidualRMSNormForward(residual.Value, out.Value, rstd, a.Value, b.Value, weight.Value, N, C, eps)
	if t.Recording() {
		t.push(node{backward: addBackward, vars: [6]*Var{residual, a, b}})
		t.push(node{backward: rmsNormBackward, vars: [6]*Var{out, residual, weight}, ts: [3]*tensor.Tensor{rstd}, ints: [6]int{N, C}})
	}
}

func rmsNormBackward(n *node) {
	out, inp, w := n.vars[0], n.vars[1], n.vars[2]
	if out.Grad == nil {
		return
	}
	if inp.Grad == nil {
		panic("autograd: RMSNorm backward needs a gradient for its input")
	}
	// A frozen weight (nil Grad) gets no gradient.
	backendOf(out).RMSNormBackward(inp.Grad, w.Grad, out.Grad, inp.Value, w.Value, n.ts[0], n.ints[0], n.ints[1])
}
