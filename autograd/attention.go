package autograd

import "github.com/vkgrad/vkgrad/tensor"

// Attention is fused causal multi-head self-attention over qkv (B,T,3C) into out (B,T,C). att
// keeps the backend's saved state for the backward and scratch is the backward's, both sized
// by the backend's AttentionSaved.
func Attention(t *Tape, out *Var, att, scratch *tensor.Tensor, qkv *Var, B, T, C, NH int) {
	backendOf(out).AttentionForward(out.Value, att, qkv.Value, B, T, C, NH)
	if t.Recording() {
		t.push(node{backward: attentionBackward, vars: [6]*Var{out, qkv}, ts: [3]*tensor.Tensor{att, scratch}, ints: [6]int{B, T, C, NH}})
	}
}

func attentionBackward(n *node) {
	out, qkv := n.vars[0], n.vars[1]
	if out.Grad != nil && qkv.Grad != nil {
		backendOf(out).AttentionBackward(qkv.Grad, n.ts[1], out.Grad, qkv.Value, out.Value, n.ts[0], n.ints[0], n.ints[1], n.ints[2], n.ints[3])
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
