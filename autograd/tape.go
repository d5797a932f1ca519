// Package autograd is a small tape autograd over tensor.Backend.
//
// Ops run their forward kernel at once and, while the tape records, append a node holding a
// backward function and its operands. Backward runs the nodes in reverse. The built-in ops store
// a static backward function plus operands in a reused node slice, so a steady-state training
// step records without heap allocations; Record accepts arbitrary closures for everything else.
//
// With recording off (NoGrad, or a nil tape) the very same forward kernels run, so values with and
// without the tape are bitwise equal.
package autograd

import "github.com/vkgrad/vkgrad/tensor"

// Var is a tensor value with an optional gradient of the same shape. Backward ops accumulate into
// Grad; a nil Grad means no gradient is wanted for that value.
type Var struct {
	Value *tensor.Tensor
	Grad  *tensor.Tensor

	gradZero bool // Grad is zero though its memory is stale (MarkGradZero)
}

// MarkGradZero declares v's gradient zero without writing it. The first backward op to write it
// then overwrites it instead of adding to it (an op that can only add fills it with zeros first),
// which saves the clearing pass and the product's read of its output. Overwriting keeps the sign
// of a -0 that 0 + (-0) would have made +0; every other bit is the same. Code that reads or writes
// Grad outside the built-in ops must call SettleGrad or TakeGradZero first.
func (v *Var) MarkGradZero() { v.gradZero = v.Grad != nil }

// TakeGradZero reports whether v's gradient is marked zero and clears the mark: the caller must
// then overwrite the whole gradient.
func (v *Var) TakeGradZero() bool {
	z := v.gradZero
	v.gradZero = false
	return z
}

// SettleGrad writes the zeros that MarkGradZero deferred, unless an op has written the gradient
// since.
func (v *Var) SettleGrad() {
	if v.TakeGradZero() {
		backendOf(v).Fill(v.Grad, 0)
	}
}

// NewVar allocates a zero-filled float32 value, and a gradient when requiresGrad.
func NewVar(b tensor.Backend, requiresGrad bool, shape ...int) (*Var, error) {
	v, err := tensor.New(b, tensor.Float32, shape...)
	if err != nil {
		return nil, err
	}
	out := &Var{Value: v}
	if requiresGrad {
		if out.Grad, err = tensor.New(b, tensor.Float32, shape...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// View returns a Var viewing the same elements of value and gradient.
func (v *Var) View(offset int, shape ...int) *Var {
	out := &Var{Value: v.Value.View(offset, shape...)}
	if v.Grad != nil {
		out.Grad = v.Grad.View(offset, shape...)
	}
	return out
}

// node is one recorded op: a backward function with no captured state and its operands, so
// recording allocates nothing once the tape's slice has grown.
type node struct {
	backward func(n *node)
	vars     [6]*Var
	ts       [3]*tensor.Tensor
	ints     [6]int
	f        float32
	// overwrites is set for ops whose backward honours MarkGradZero itself; the tape settles the
	// marked gradients of every other op's operands before running its backward.
	overwrites bool
	mm         tensor.MatMulParams
	closure    func()
}

// Tape records backward work during a forward pass.
type Tape struct {
	nodes     []node
	recording bool
}

// NewTape returns a tape that records.
func NewTape() *Tape { return &Tape{recording: true} }

// Recording reports whether ops called with this tape record their backward.
func (t *Tape) Recording() bool { return t != nil && t.recording }

// Len is the number of recorded nodes.
func (t *Tape) Len() int {
	if t == nil {
		return 0
	}
	return len(t.nodes)
}

// Record appends an arbitrary backward closure. The tape settles nothing for it: a closure that
// writes a gradient that may be marked zero (MarkGradZero) takes or settles the mark itself.
func (t *Tape) Record(backward func()) {
	if t.Recording() {
		t.nodes = append(t.nodes, node{backward: runClosure, closure: backward})
	}
}

func runClosure(n *node) { n.closure() }

func (t *Tape) push(n node) {
	if t.Recording() {
		t.nodes = append(t.nodes, n)
	}
}

// Backward runs the recorded nodes in reverse order, then clears the tape. The caller seeds the
// output gradients first (e.g. fills dloss with 1/N).
func (t *Tape) Backward() {
	if t == nil {
		return
	}
	for i := len(t.nodes) - 1; i >= 0; i-- {
		n := &t.nodes[i]
		if !n.overwrites {
			settleVars(n)
		}
		n.backward(n)
	}
	t.Reset()
}

// Reset forgets the recorded nodes, keeping capacity.
func (t *Tape) Reset() {
	if t == nil {
		return
	}
	clear(t.nodes)
	t.nodes = t.nodes[:0]
}

// NoGrad runs fn with recording switched off and restores the previous state afterwards.
func NoGrad(t *Tape, fn func()) {
	if t == nil {
		fn()
		return
	}
	prev := t.recording
	t.recording = false
	defer func() { t.recording = prev }()
	fn()
}

// settleVars settles n's operands' gradients for a backward that can only add into them.
func settleVars(n *node) {
	for _, v := range n.vars {
		if v != nil && v.gradZero {
			v.SettleGrad()
		}
	}
}

func backendOf(v *Var) tensor.Backend { return v.Value.Backend() }

func grad(v *Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.Grad
}

func value(v *Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.Value
}
