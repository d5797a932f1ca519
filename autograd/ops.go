package autograd

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

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

// MatMul sets out = op(a) @ op(b) (+ bias); see tensor.Backend.MatMul. bias may be nil.
func MatMul(t *Tape, out, a, b, bias *Var, p tensor.MatMulParams) {
	if p.Accumulate || p.GeluOut != nil {
		panic("autograd: MatMul records an overwriting product; Accumulate and GeluOut are not allowed (see MatMulGelu)")
	}
	backendOf(out).MatMul(out.Value, a.Value, b.Value, value(bias), p)
	if t.Recording() {
		t.push(node{backward: matmulBackward, vars: [6]*Var{out, a, b, bias}, mm: p})
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
		t.push(node{backward: matmulBackward, vars: [6]*Var{out, a, b, bias}, mm: p})
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
		t.push(node{backward: matmulBackward, vars: [6]*Var{out, a, b}, mm: p})
	}
}

func matmulBackward(n *node) {
	out, a, b, bias, p := n.vars[0], n.vars[1], n.vars[2], n.vars[3], n.mm
	if out.Grad == nil {
		return
	}
	be := backendOf(out)
	dC := out.Grad
	if a.Grad != nil {
		if !p.TransA { // dA = dC @ op(B)^T
			be.MatMul(a.Grad, dC, b.Value, nil, tensor.MatMulParams{M: p.M, N: p.K, K: p.N, TransB: !p.TransB, Accumulate: true, Batch: p.Batch})
		} else { // stored A is (K,M): dA = op(B) @ dC^T
			be.MatMul(a.Grad, b.Value, dC, nil, tensor.MatMulParams{M: p.K, N: p.M, K: p.N, TransA: p.TransB, TransB: true, Accumulate: true, Batch: p.Batch})
		}
	}
	if b.Grad != nil {
		if !p.TransB { // dB = op(A)^T @ dC
			be.MatMul(b.Grad, a.Value, dC, nil, tensor.MatMulParams{M: p.K, N: p.N, K: p.M, TransA: !p.TransA, Accumulate: true, Batch: p.Batch})
		} else { // stored B is (N,K): dB = dC^T @ op(A)
			be.MatMul(b.Grad, dC, a.Value, nil, tensor.MatMulParams{M: p.N, N: p.K, K: p.M, TransA: true, TransB: p.TransA, Accumulate: true, Batch: p.Batch})
		}
	}
	if bias != nil && bias.Grad != nil {
		be.BiasBackward(bias.Grad, dC, p.M*max(p.Batch, 1), p.N)
	}
}

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

// CrossEntropy sets losses[i] = -log softmax(logits[i,:V])[targets[i]] for N rows of Vp logits,
// keeping the probabilities in probs (N*Vp) for the backward.
func CrossEntropy(t *Tape, losses *Var, probs *tensor.Tensor, logits *Var, targets *tensor.Tensor, N, V, Vp int) {
	backendOf(losses).CrossEntropyForward(losses.Value, probs, logits.Value, targets, N, V, Vp)
	if t.Recording() {
		t.push(node{backward: crossEntropyBackward, vars: [6]*Var{losses, logits}, ts: [3]*tensor.Tensor{probs, targets}, ints: [6]int{N, V, Vp}})
	}
}

// CrossEntropyFused is CrossEntropy for a loss whose gradient is dloss on every row (a mean,
// known before the backward): the forward writes logits' gradient at once (written, not
// added) and keeps no probabilities, so nothing is recorded. The caller must leave
// logits.Grad alone until the backward (llm.c's fused classifier).
func CrossEntropyFused(losses, logits *Var, targets *tensor.Tensor, N, V, Vp int, dloss float32) {
	backendOf(losses).CrossEntropyFused(losses.Value, logits.Grad, logits.Value, targets, N, V, Vp, dloss)
}

func crossEntropyBackward(n *node) {
	losses, logits := n.vars[0], n.vars[1]
	if losses.Grad != nil && logits.Grad != nil {
		backendOf(losses).CrossEntropyBackward(logits.Grad, n.ts[0], n.ts[1], losses.Grad, n.ints[0], n.ints[1], n.ints[2])
	}
}

// LogSoftmaxGather sets logp[i] = log_softmax(logits[i,:V]/temperature)[targets[i]] and, when
// entropy is not nil, the entropy of that distribution. cutoff, when not nil (float32, N),
// truncates row i's distribution to the columns whose logit is at least cutoff[i] (and the
// target), renormalised: the log-prob and entropy of a top-k/top-p sampler's distribution
// (see tensor.Backend). The cutoff is a constant: no gradient flows into it.
func LogSoftmaxGather(t *Tape, logp, entropy, logits *Var, targets, cutoff *tensor.Tensor, N, V, Vp int, temperature float32) {
	backendOf(logp).LogSoftmaxGather(logp.Value, value(entropy), logits.Value, targets, cutoff, N, V, Vp, temperature)
	if t.Recording() {
		t.push(node{backward: logSoftmaxGatherBackward, vars: [6]*Var{logp, entropy, logits}, ts: [3]*tensor.Tensor{targets, cutoff}, ints: [6]int{N, V, Vp}, f: temperature})
	}
}

func logSoftmaxGatherBackward(n *node) {
	logp, entropy, logits := n.vars[0], n.vars[1], n.vars[2]
	dlogp, dentropy := logp.Grad, grad(entropy)
	if logits.Grad == nil || (dlogp == nil && dentropy == nil) {
		return
	}
	be := backendOf(logits)
	if dlogp == nil {
		// An entropy-only objective: the kernel always reads dlogp, so give it zeros.
		zeros, err := tensor.New(be, tensor.Float32, n.ints[0])
		if err != nil {
			panic(fmt.Sprintf("autograd: LogSoftmaxGather backward: %v", err))
		}
		defer be.Free(zeros.Storage) // released once queued work is done (Backend.Free)
		dlogp = zeros
	}
	be.LogSoftmaxGatherBackward(logits.Grad, logits.Value, n.ts[0], n.ts[1], dlogp, dentropy, n.ints[0], n.ints[1], n.ints[2], n.f)
}

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
