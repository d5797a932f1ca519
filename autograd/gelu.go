package autograd

// Gelu applies the tanh-approximated GELU elementwise.
func Gelu(t *Tape, out, inp *Var) {
	backendOf(out).GeluForward(out.Value, inp.Value)
	if t.Recording() {
		t.push(node{backward: geluBackward, vars: [6]*Var{out, inp}})
	}
}

func geluBackward(n *node) {
	out, inp := n.vars[0], n.vars[1]
	if out.Grad != nil && inp.Grad != nil {
		backendOf(out).GeluBackward(inp.Grad, inp.Value, out.Grad)
	}
}
