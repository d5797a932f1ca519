package vk

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

var (
	kCrossEntropyFwd   = Kernel{Shader: "crossentropy_forward", Bindings: 4, Push: 7}
	kCrossEntropyFwd4  = Kernel{Shader: "crossentropy_forward_vec4", Bindings: 4, Push: 7}
	kCrossEntropyBwd   = Kernel{Shader: "crossentropy_backward", Bindings: 4, Push: 7}
	kCrossEntropyFused = Kernel{Shader: "crossentropy_fused", Bindings: 4, Push: 8}
	kCrossEntropyFuse4 = Kernel{Shader: "crossentropy_fused_vec4", Bindings: 4, Push: 8}
	kLogSoftmaxGather  = Kernel{Shader: "logsoftmax_gather", Bindings: 5, Push: 11}
	kLogSoftmaxBwd     = Kernel{Shader: "logsoftmax_gather_backward", Bindings: 6, Push: 12}
)

func checkVocab(op string, V, Vp int) {
	if V < 1 || V > Vp {
		panic(fmt.Sprintf("vk: %s: V=%d must be in [1, Vp=%d]", op, V, Vp))
	}
}

// CrossEntropyForward computes the softmax of each row's first V logits into probs and the
// loss at the target, one workgroup per row.
func (b *Backend) CrossEntropyForward(losses, probs, logits, targets *tensor.Tensor, N, V, Vp int) {
	crossEntropyRows(b, kCrossEntropyFwd, kCrossEntropyFwd4, "CrossEntropyForward", "probs", 4, losses, probs, logits, targets, N, V, Vp,
		func(p crossEntropyForwardPush) crossEntropyForwardPush { return p })
}

// CrossEntropyFused computes each row's loss and writes its gradient for a loss gradient of
// dloss into dlogits, one workgroup per row and no probabilities in memory.
func (b *Backend) CrossEntropyFused(losses, dlogits, logits, targets *tensor.Tensor, N, V, Vp int, dloss float32) {
	crossEntropyRows(b, kCrossEntropyFused, kCrossEntropyFuse4, "CrossEntropyFused", "dlogits", 5, losses, dlogits, logits, targets, N, V, Vp,
		func(p crossEntropyForwardPush) crossEntropyFusedPush { return crossEntropyFusedPush{p, dloss} })
}

// crossEntropyRows runs k, the forward or the fused kernel, over N rows: the losses and out (the
// probabilities, or the gradient), flops a column; push extends the forward's push constants
// to k's. Where every row of logits and out starts on a vec4 it runs k4, k's twin with vec4
// loads and stores (the same bits; on lavapipe the fused loss takes about half the time).
func crossEntropyRows[P any](b *Backend, k, k4 Kernel, op, outName string, flops float64, losses, out, logits, targets *tensor.Tensor, N, V, Vp int, push func(crossEntropyForwardPush) P) {
	b.dev.Cost(flops*float64(N*V), 4*2*float64(N*Vp))
	nnDims(op, N)
	checkVocab(op, V, Vp)
	ls, os := nnF32(b, op, "losses", losses, N), nnF32(b, op, outName, out, N*Vp)
	gs, ts := nnF32(b, op, "logits", logits, N*Vp), nnI32(b, op, "targets", targets, N)
	args := []nnArg{
		nnRows(ls, losses, 1, N, true), nnRows(os, out, Vp, N*Vp, true),
		nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false),
	}
	if Vp%4 == 0 && vec4Aligned(args[1:3]) {
		k = k4
	}
	nnRun(b, b.rowKernel(k), op, N, args, b.nnRowGroups, func(_, cr int, f firsts) P {
		return push(crossEntropyForwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), OffLosses: f[0], OffProbs: f[1], OffLogits: f[2], OffTg: f[3]})
	})
}

// CrossEntropyBackward accumulates the loss gradient into the first V columns of dlogits.
func (b *Backend) CrossEntropyBackward(dlogits, probs, targets, dlosses *tensor.Tensor, N, V, Vp int) {
	b.dev.Cost(2*float64(N*V), 4*3*float64(N*Vp))
	const op = "CrossEntropyBackward"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	ds, ps := nnF32(b, op, "dlogits", dlogits, N*Vp), nnF32(b, op, "probs", probs, N*Vp)
	ts, ls := nnI32(b, op, "targets", targets, N), nnF32(b, op, "dlosses", dlosses, N)
	nnRun(b, b.rowKernel(kCrossEntropyBwd), op, N, []nnArg{
		nnRows(ds, dlogits, Vp, N*Vp, true), nnRows(ps, probs, Vp, N*Vp, false),
		nnRows(ts, targets, 1, N, false), nnRows(ls, dlosses, 1, N, false),
	}, b.nnRowGroups, func(_, cr int, f firsts) crossEntropyBackwardPush {
		return crossEntropyBackwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), OffD: f[0], OffProbs: f[1], OffTg: f[2], OffDl: f[3]}
	})
}

func invTemperature(op string, temperature float32) float32 {
	if !(temperature > 0) || math.IsInf(float64(temperature), 0) {
		panic(fmt.Sprintf("vk: %s: temperature %v, want a positive finite value", op, temperature))
	}
	return float32(1 / float64(temperature))
}

// lsgCutoff binds the per-row cutoff of a truncated LogSoftmaxGather, or stand (never read)
// with has_cut 0 when cutoff is nil.
func (b *Backend) lsgCutoff(op string, cutoff *tensor.Tensor, N int, stand nnArg) (nnArg, uint32) {
	if cutoff == nil {
		return stand, 0
	}
	return nnRows(nnF32(b, op, "cutoff", cutoff, N), cutoff, 1, N, false), 1
}

// LogSoftmaxGather computes log-probabilities at the targets at a temperature, and the
// entropy when entropy is not nil, one workgroup per row with float32 sums. With cutoff each
// row's softmax runs over the columns whose logit is at least its cutoff, and the target.
func (b *Backend) LogSoftmaxGather(logp, entropy, logits, targets, cutoff *tensor.Tensor, N, V, Vp int, temperature float32) {
	const op = "LogSoftmaxGather"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	invT := invTemperature(op, temperature)
	lps := nnF32(b, op, "logp", logp, N)
	gs, ts := nnF32(b, op, "logits", logits, N*Vp), nnI32(b, op, "targets", targets, N)
	ent, hasEnt := nnRows(lps, logp, 1, N, false), uint32(0) // logp stands in, never written
	ent.unused = true
	if entropy != nil {
		ent, hasEnt = nnRows(nnF32(b, op, "entropy", entropy, N), entropy, 1, N, true), 1
	}
	cut, hasCut := b.lsgCutoff(op, cutoff, N, nnRows(ts, targets, 1, N, false)) // targets stand in
	b.dev.Cost(float64(4+2*hasEnt)*float64(N*V), 4*float64(N*Vp))
	nnRun(b, b.rowKernel(kLogSoftmaxGather), op, N, []nnArg{
		nnRows(lps, logp, 1, N, true), ent, nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false), cut,
	}, b.nnRowGroups, func(_, cr int, f firsts) logSoftmaxGatherPush {
		return logSoftmaxGatherPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), HasEnt: hasEnt, InvT: invT, HasCut: hasCut,
			OffLogp: f[0], OffEnt: f[1], OffLogits: f[2], OffTg: f[3], OffCut: f[4]}
	})
}

// LogSoftmaxGatherBackward accumulates the gradient of the gathered log-probabilities (and of
// the entropy when dentropy is not nil) into the first V columns of dlogits, under the
// distribution LogSoftmaxGather computed (truncated by cutoff when it is not nil).
func (b *Backend) LogSoftmaxGatherBackward(dlogits, logits, targets, cutoff, dlogp, dentropy *tensor.Tensor, N, V, Vp int, temperature float32) {
	const op = "LogSoftmaxGatherBackward"
	nnDims(op, N)
	checkVocab(op, V, Vp)
	invT := invTemperature(op, temperature)
	ds, gs := nnF32(b, op, "dlogits", dlogits, N*Vp), nnF32(b, op, "logits", logits, N*Vp)
	ts, lps := nnI32(b, op, "targets", targets, N), nnF32(b, op, "dlogp", dlogp, N)
	dent, hasEnt := nnRows(lps, dlogp, 1, N, false), uint32(0) // dlogp stands in, never read
	if dentropy != nil {
		dent, hasEnt = nnRows(nnF32(b, op, "dentropy", dentropy, N), dentropy, 1, N, false), 1
	}
	cut, hasCut := b.lsgCutoff(op, cutoff, N, nnRows(lps, dlogp, 1, N, false)) // dlogp stands in
	b.dev.Cost(float64(6+3*hasEnt)*float64(N*V), 4*3*float64(N*Vp))            // logits read, dlogits read and written
	nnRun(b, b.rowKernel(kLogSoftmaxBwd), op, N, []nnArg{
		nnRows(ds, dlogits, Vp, N*Vp, true), nnRows(gs, logits, Vp, N*Vp, false), nnRows(ts, targets, 1, N, false),
		nnRows(lps, dlogp, 1, N, false), dent, cut,
	}, b.nnRowGroups, func(_, cr int, f firsts) logSoftmaxGatherBackwardPush {
		return logSoftmaxGatherBackwardPush{Rows: uint32(cr), V: uint32(V), Vp: uint32(Vp), HasEnt: hasEnt, InvT: invT, HasCut: hasCut,
			OffD: f[0], OffLogits: f[1], OffTg: f[2], OffDlogp: f[3], OffDent: f[4], OffCut: f[5]}
	})
}
