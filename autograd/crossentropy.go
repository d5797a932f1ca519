package autograd

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

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
