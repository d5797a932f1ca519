package autograd

import "github.com/vkgrad/vkgrad/tensor"

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
