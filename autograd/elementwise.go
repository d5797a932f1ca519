package autograd

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

// Add sets out = a + b. out must not be a or b: its gradient would be counted twice.
func Add(t *Tape, out, a, b *Var) {
	if out == a || out == b {
		panic("autograd: Add output must be a new Var, not one of its inputs")
	}
	backendOf(out).Add(out.Value, a.Value, b.Value)
	if t.Recording() {
		t.push(node{backward: addBackward, vars: [6]*Var{out, a, b}})
	}
}

func addBackward(n *node) {
	out, a, b := n.vars[0], n.vars[1], n.vars[2]
	if out.Grad == nil {
		return
	}
	be := backendOf(out)
	if a.Grad != nil {
		be.Axpy(a.Grad, 1, out.Grad)
	}
	if b.Grad != nil {
		be.Axpy(b.Grad, 1, out.Grad)
	}
}

// Scale sets out = s * x.
func Scale(t *Tape, out, x *Var, s float32) {
	be := backendOf(out)
	be.Copy(out.Value, x.Value)
	be.Scale(out.Value, s)
	if t.Recording() {
		t.push(node{backward: scaleBackward, vars: [6]*Var{out, x}, f: s})
	}
}

func scaleBackward(n *node) {
	out, x := n.vars[0], n.vars[1]
	if out.Grad != nil && x.Grad != nil {
		backendOf(out).Axpy(x.Grad, n.f, out.Grad)
	}
}

// Mul sets out = a * b elementwise. out must not alias a or b. Its backward uses out's value
// buffer as scratch (no later backward step reads it), so read out before calling Backward.
func Mul(t *Tape, out, a, b *Var) {
	if out.Value.Storage == a.Value.Storage || out.Value.Storage == b.Value.Storage {
		panic(fmt.Sprintf("autograd: Mul output must not share storage with its inputs (%v)", out.Value))
	}
	backendOf(out).Mul(out.Value, a.Value, b.Value)
	if t.Recording() {
		t.push(node{backward: mulBackward, vars: [6]*Var{out, a, b}})
	}
}

func mulBackward(n *node) {
	out, a, b := n.vars[0], n.vars[1], n.vars[2]
	if out.Grad == nil {
		return
	}
	be := backendOf(out)
	tmp := out.Value
	if a.Grad != nil {
		be.Mul(tmp, out.Grad, b.Value)
		be.Axpy(a.Grad, 1, tmp)
	}
	if b.Grad != nil {
		be.Mul(tmp, out.Grad, a.Value)
		be.Axpy(b.Grad, 1, tmp)
	}
}

// Dropout zeroes each element with probability p (keyed by seed and position, the same on every
// backend) and scales the rest by 1/(1-p); mask keeps the per-element scale for the backward.
// Like Mul, its backward uses out's value buffer as scratch.
func Dropout(t *Tape, out *Var, mask *tensor.Tensor, inp *Var, p float32, seed uint64) {
	backendOf(out).Dropout(out.Value, mask, inp.Value, p, seed)
	if t.Recording() {
		t.push(node{backward: dropoutBackward, vars: [6]*Var{out, inp}, ts: [3]*tensor.Tensor{mask}})
	}
}

func dropoutBackward(n *node) {
	out, inp := n.vars[0], n.vars[1]
	if out.Grad == nil || inp.Grad == nil {
		return
	}
	be := backendOf(out)
	be.Mul(out.Value, out.Grad, n.ts[0])
	be.Axpy(inp.Grad, 1, out.Value)
}

// GatherRows copies row positions[k] of src (rows of C values) to row k of dst, one copy per run
// of consecutive positions, and records adding dst's gradient back into those rows of src's.
func GatherRows(t *Tape, dst, src *Var, positions []int, C int) {
	be := backendOf(dst)
	var runs [][3]int // (source row, destination row, length)
	for k := 0; k < len(positions); {
		j := k + 1
		for j < len(positions) && positions[j] == positions[j-1]+1 {
			j++
		}
		runs = append(runs, [3]int{positions[k], k, j - k})
		k = j
	}
	for _, r := range runs {
		be.Copy(dst.Value.View(r[1]*C, r[2]*C), src.Value.View(r[0]*C, r[2]*C))
	}
	if !t.Recording() {
		return
	}
	be.Fill(dst.Grad, 0)
	t.Record(func() {
		if src.Grad == nil {
			return
		}
		for _, r := range runs {
			be.Axpy(src.Grad.View(r[0]*C, r[2]*C), 1, dst.Grad.View(r[1]*C, r[2]*C))
		}
	})
}
