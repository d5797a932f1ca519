package autograd

import "github.com/vkgrad/vkgrad/tensor"

// Encoder sets out[b,t] = wte[tokens[b,t]] + wpe[t].
func Encoder(t *Tape, out *Var, tokens *tensor.Tensor, wte, wpe *Var, B, T, C int) {
	backendOf(out).EncoderForward(out.Value, tokens, wte.Value, wpe.Value, B, T, C)
	if t.Recording() {
		t.push(node{backward: encoderBackward, vars: [6]*Var{out, wte, wpe}, ts: [3]*tensor.Tensor{tokens}, ints: [6]int{B, T, C}})
	}
}

func encoderBackward(n *node) {
	out, wte, wpe := n.vars[0], n.vars[1], n.vars[2]
	if out.Grad == nil || wte.Grad == nil || wpe.Grad == nil {
		return
	}
	backendOf(out).EncoderBackward(wte.Grad, wpe.Grad, out.Grad, n.ts[0], n.ints[0], n.ints[1], n.ints[2])
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
