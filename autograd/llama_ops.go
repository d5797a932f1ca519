package autograd

import "github.com/vkgrad/vkgrad/tensor"

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

// RoPE applies rotary embeddings to the first rotHeads of the H heads of each of N rows of
// rowLen values, at positions pos0 + row%T; see tensor.Backend.RoPEForward.
func RoPE(t *Tape, out, inp *Var, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	backendOf(out).RoPEForward(out.Value, inp.Value, table, N, T, pos0, H, rotHeads, rowLen)
	if t.Recording() {
		t.push(node{backward: ropeBackward, vars: [6]*Var{out, inp}, ts: [3]*tensor.Tensor{table},
			ints: [6]int{N, T, pos0, H, rotHeads, rowLen}})
	}
}

func ropeBackward(n *node) {
	out, inp := n.vars[0], n.vars[1]
	if out.Grad != nil && inp.Grad != nil {
		i := n.ints
		backendOf(out).RoPEBackward(inp.Grad, out.Grad, n.ts[0], i[0], i[1], i[2], i[3], i[4], i[5])
	}
}

// SwiGLU sets out = silu(gate) * up elementwise (the SiLU-gated MLP activation).
func SwiGLU(t *Tape, out, gate, up *Var) {
	n := out.Value.Numel()
	backendOf(out).SwiGLUForward(out.Value, gate.Value, up.Value, n)
	if t.Recording() {
		t.push(node{backward: swigluBackward, vars: [6]*Var{out, gate, up}, ints: [6]int{n}})
	}
}

func swigluBackward(n *node) {
	out, gate, up := n.vars[0], n.vars[1], n.vars[2]
	if out.Grad == nil {
		return
	}
	if gate.Grad == nil || up.Grad == nil {
		panic("autograd: SwiGLU backward needs gradients for gate and up")
	}
	backendOf(out).SwiGLUBackward(gate.Grad, up.Grad, gate.Value, up.Value, out.Grad, n.ints[0])
}

// Embedding sets out[r] = wte[tokens[r]] for N rows.
func Embedding(t *Tape, out *Var, tokens *tensor.Tensor, wte *Var, N, C int) {
	backendOf(out).EmbeddingForward(out.Value, tokens, wte.Value, N, C)
	if t.Recording() {
		t.push(node{backward: embeddingBackward, vars: [6]*Var{out, wte}, ts: [3]*tensor.Tensor{tokens}, ints: [6]int{N, C}})
	}
}

func embeddingBackward(n *node) {
	out, wte := n.vars[0], n.vars[1]
	if out.Grad != nil && wte.Grad != nil {
		backendOf(out).EmbeddingBackward(wte.Grad, out.Grad, n.ts[0], n.ints[0], n.ints[1])
	}
}

// PackQKV lays out q (N, H·D), k and v (N, KV·D each) as attention's packed qkv (N, 3·H·D),
// repeating each KV head for its H/KV query heads (grouped-query attention).
func PackQKV(t *Tape, qkv, q, k, v *Var, N, H, KV, D int) {
	backendOf(qkv).PackQKV(qkv.Value, q.Value, k.Value, v.Value, N, H, KV, D)
	if t.Recording() {
		t.push(node{backward: packQKVBackward, vars: [6]*Var{qkv, q, k, v}, ints: [6]int{N, H, KV, D}})
	}
}

func packQKVBackward(n *node) {
	qkv, q, k, v := n.vars[0], n.vars[1], n.vars[2], n.vars[3]
	if qkv.Grad == nil {
		return
	}
	if q.Grad == nil || k.Grad == nil || v.Grad == nil {
		panic("autograd: PackQKV backward needs gradients for q, k and v")
	}
	i := n.ints
	backendOf(qkv).PackQKVBackward(q.Grad, k.Grad, v.Grad, qkv.Grad, i[0], i[1], i[2], i[3])
}
