package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// BenchmarkReductions times the row reductions of a gpt2-mini training step (B=4, T=64:
// 256 rows of C=128 and of GPT-2's padded vocabulary) and the gradient norm's sum of squares,
// with the reductions in shared memory and through subgroups, for comparison in one run.
func BenchmarkReductions(b *testing.B) {
	const (
		N, C  = 256, 128
		V, Vp = 50257, 50304
		P     = 7 << 20 // about gpt2-mini's parameters
	)
	be := benchBackend(b)
	f32 := func(n int) *tensor.Tensor {
		x, err := tensor.New(be, tensor.Float32, n)
		if err != nil {
			b.Fatal(err)
		}
		be.Fill(x, 0.25)
		return x
	}
	x, out, dx, w, bias, mean, rstd := f32(N*C), f32(N*C), f32(N*C), f32(C), f32(C), f32(N), f32(N)
	logits, probs, losses, sum, params := f32(N*Vp), f32(N*Vp), f32(N), f32(1), f32(P)
	targets, err := tensor.New(be, tensor.Int32, N)
	if err != nil {
		b.Fatal(err)
	}
	if err := be.Sync(); err != nil {
		b.Fatal(err)
	}
	ops := []struct {
		name string
		run  func()
	}{
		{"LayerNormForward", func() { be.LayerNormForward(out, mean, rstd, x, w, bias, N, C) }},
		{"LayerNormBackward", func() { be.LayerNormBackward(dx, w, bias, out, x, w, mean, rstd, N, C) }},
		{"RMSNormForward", func() { be.RMSNormForward(out, rstd, x, w, N, C, 1e-5) }},
		{"CrossEntropyForward", func() { be.CrossEntropyForward(losses, probs, logits, targets, N, V, Vp) }},
		{"LogSoftmaxGather", func() { be.LogSoftmaxGather(losses, mean, logits, targets, nil, N, V, Vp, 1) }},
		{"LogSoftmaxGatherBackward", func() {
			be.LogSoftmaxGatherBackward(probs, logits, targets, nil, losses, mean, N, V, Vp, 1)
		}},
		{"SumSquares", func() { be.SumSquares(sum, params) }},
	}
	for _, op := range ops {
		for _, sg := range []bool{false, true} {
			if sg && !be.dev.Info.SubgroupArithmetic {
				continue
			}
			name := op.name + "/shared"
			if sg {
				name = op.name + "/subgroup"
			}
			b.Run(name, func(b *testing.B) {
				be.subgroupReduce = sg
				op.run() // builds the pipeline
				for b.Loop() {
					op.run()
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
