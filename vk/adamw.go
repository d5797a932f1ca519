package vk

import (
	"fmt"
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

var (
	kAdamW     = Kernel{Shader: "adamw", Bindings: 5, Push: 17}
	kAdamWVec4 = Kernel{Shader: "adamw_vec4", Bindings: 5, Push: 17}
)

// AdamW updates params in place with llm.c's AdamW (see tensor.Backend). With clipping, the
// shader reads the gradient's sum of squares from the device, so no host read is needed.
func (b *Backend) AdamW(params, grads, m, v *tensor.Tensor, p tensor.AdamWParams) {
	const op = "AdamW"
	if p.Step < 1 {
		panic(fmt.Sprintf("vk: AdamW: step %d, want >= 1", p.Step))
	}
	n := sameSize(op, params, grads, m, v)
	b.dev.Cost(12*float64(n), 4*7*float64(n)) // reads p, g, m, v; writes p, m, v
	ps, gs := b.view(params, tensor.Float32, op), b.view(grads, tensor.Float32, op)
	ms, vs := b.view(m, tensor.Float32, op), b.view(v, tensor.Float32, op)
	if n == 0 {
		return
	}
	var flags uint32
	ss, soff := gs, grads.Offset // a dummy binding when not clipping
	if p.GradSumSq != nil && p.MaxNorm > 0 {
		if p.GradSumSq.Numel() != 1 {
			panic(fmt.Sprintf("vk: AdamW: GradSumSq has %d elements, want 1", p.GradSumSq.Numel()))
		}
		ss, soff, flags = b.view(p.GradSumSq, tensor.Float32, op), p.GradSumSq.Offset, 1
	}
	// The same float32 roundings as the CPU backend.
	c1 := 1 - float32(math.Pow(float64(p.Beta1), float64(p.Step)))
	c2 := 1 - float32(math.Pow(float64(p.Beta2), float64(p.Step)))
	args := []nnArg{
		nnRows(ps, params, 1, n, true), nnRows(gs, grads, 1, n, false), nnRows(ms, m, 1, n, true),
		nnRows(vs, v, 1, n, true), {buf: ss.buf, off: soff, n: 1},
	}
	push := adamwPush{Lr: p.LR, B1: p.Beta1, Omb1: 1 - p.Beta1, B2: p.Beta2, Omb2: 1 - p.Beta2, Eps: p.Eps, Wd: p.WeightDecay,
		C1: c1, C2: c2, MaxNorm: p.MaxNorm, Flags: flags}
	// vec4s where p, g, m and v allow: a quarter of the loads and stores (on lavapipe,
	// BenchmarkAdamW4M: 1.4x). The sum of squares stays one float.
	k, per := elemWidth(kAdamW, kAdamWVec4, n, args[:4])
	u := uint32(per)
	nnRun(b, k, op, n/per, args, b.nnFlatGroups, func(_, cn int, f firsts) adamwPush {
		push.N, push.OffP, push.OffG, push.OffM, push.OffV, push.OffS = uint32(cn), f[0]/u, f[1]/u, f[2]/u, f[3]/u, f[4]
		return push
	})
}
