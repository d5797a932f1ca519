package autograd

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
