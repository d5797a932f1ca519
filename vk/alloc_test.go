package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/allocs"
	"github.com/vkgrad/vkgrad/internal/race"
	"github.com/vkgrad/vkgrad/tensor"
)

// TestOpsAllocateNothing pins at zero the Go heap allocations of recording an op and
// submitting it, once a first call has built its pipelines: in one dispatch, and in chunks
// with tiny limits. A GPT-2 training step records about 90 dispatches; see
// TestVulkanStepSteadyState in nn/train for the whole step.
func TestOpsAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocations are not pinned under the race detector (purego takes each call's argument block from a sync.Pool, which it drops from)")
	}
	const (
		B, T, C, NH = 2, 8, 16, 2
		N           = B * T
		V, Vp       = 20, 24
		maxT        = 12
	)
	for name, be := range backends(t) {
		t.Run(name, func(t *testing.T) {
			f32 := func(n int) *tensor.Tensor {
				x, err := tensor.New(be, tensor.Float32, n)
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			i32 := func(n int) *tensor.Tensor {
				x, err := tensor.New(be, tensor.Int32, n)
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			x, y, z := f32(N*4*C), f32(N*4*C), f32(N*4*C)
			w, bias, sum := f32(N*4*C), f32(4*C), f32(1)
			mean, rstd := f32(N), f32(N)
			qkv, dqkv, att, scratch := f32(N*3*C), f32(N*3*C), f32(B*NH*T*T), f32(B*NH*T*T)
			kcache, vcache := f32(B*maxT*C), f32(B*maxT*C)
			tokens, wte, wpe := i32(N), f32(V*C), f32(T*C)
			logits, probs, losses := f32(N*Vp), f32(N*Vp), f32(N)
			m, v := f32(N*4*C), f32(N*4*C)
			host := make([]float32, N)
			be.Fill(w, 0.01)
			be.Fill(x, 0.5)
			// Views allocate their Tensor: make them before counting.
			xNC, yNC, zN4C := x.View(0, N*C), y.View(0, N*C), z.View(0, N*4*C)
			wC4C, lnw, lnb, lnw2, lnb2 := w.View(0, C*4*C), w.View(0, C), bias.View(0, C), w.View(C, C), bias.View(C, C)
			yBC, qkvB := y.View(0, B*C), qkv.View(0, B*3*C)

			ops := []struct {
				name string
				run  func()
			}{
				{"Fill", func() { be.Fill(x, 0.5) }},
				{"Copy", func() { be.Copy(y, x) }},
				{"Add", func() { be.Add(z, x, y) }},
				{"Mul", func() { be.Mul(z, x, y) }},
				{"Axpy", func() { be.Axpy(z, 0.5, x) }},
				{"Scale", func() { be.Scale(z, 0.5) }},
				{"Sum", func() { be.Sum(sum, x) }},
				{"SumSquares", func() { be.SumSquares(sum, x) }},
				{"MatMul", func() {
					be.MatMul(zN4C, xNC, wC4C, bias, tensor.MatMulParams{M: N, N: 4 * C, K: C})
				}},
				{"MatMulGelu", func() {
					be.MatMul(zN4C, xNC, wC4C, bias, tensor.MatMulParams{M: N, N: 4 * C, K: C, GeluOut: y})
				}},
				{"MatMulTransAccumulate", func() {
					be.MatMul(wC4C, xNC, zN4C, nil, tensor.MatMulParams{M: C, N: 4 * C, K: N, TransA: true, Accumulate: true})
				}},
				{"BiasBackward", func() { be.BiasBackward(bias, z, N, 4*C) }},
				{"LayerNormForward", func() { be.LayerNormForward(y, mean, rstd, x, lnw, lnb, N, C) }},
				{"ResidualLayerNormForward", func() { be.ResidualLayerNormForward(z, y, mean, rstd, x, x, lnw, lnb, N, C) }},
				{"LayerNormBackward", func() {
					be.LayerNormBackward(z, lnw2, lnb2, y, x, lnw, mean, rstd, N, C)
				}},
				{"GeluForward", func() { be.GeluForward(y, x) }},
				{"GeluBackward", func() { be.GeluBackward(z, x, y) }},
				{"AttentionForward", func() { be.AttentionForward(yNC, att, qkv, B, T, C, NH) }},
				{"AttentionBackward", func() { be.AttentionBackward(dqkv, scratch, yNC, qkv, yNC, att, B, T, C, NH) }},
				{"AttentionDecode", func() { be.AttentionDecode(yBC, kcache, vcache, qkvB, B, 1, 3, maxT, C, NH) }},
				{"EncoderForward", func() { be.EncoderForward(yNC, tokens, wte, wpe, B, T, C) }},
				{"EncoderBackward", func() { be.EncoderBackward(wte, wpe, yNC, tokens, B, T, C) }},
				{"CrossEntropyForward", func() { be.CrossEntropyForward(losses, probs, logits, tokens, N, V, Vp) }},
				{"CrossEntropyBackward", func() { be.CrossEntropyBackward(logits, probs, tokens, losses, N, V, Vp) }},
				{"CrossEntropyFused", func() { be.CrossEntropyFused(losses, probs, logits, tokens, N, V, Vp, 0.25) }},
				{"LogSoftmaxGather", func() { be.LogSoftmaxGather(losses, mean, logits, tokens, nil, N, V, Vp, 0.7) }},
				{"LogSoftmaxGatherBackward", func() { be.LogSoftmaxGatherBackward(probs, logits, tokens, nil, losses, mean, N, V, Vp, 0.7) }},
				{"Dropout", func() { be.Dropout(y, z, x, 0.1, 42) }},
				{"AdamW", func() {
					be.AdamW(w, y, m, v, tensor.AdamWParams{
						LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Step: 3, GradSumSq: sum, MaxNorm: 1,
					})
				}},
				{"UploadDownload", func() {
					if err := be.Upload(losses, host); err != nil {
						t.Error(err)
					}
					if err := be.Download(host, losses); err != nil {
						t.Error(err)
					}
				}},
			}
			for _, op := range ops {
				run := func() {
					op.run()
					if err := be.Sync(); err != nil {
						t.Errorf("%s: %v", op.name, err)
					}
				}
				run() // builds the pipelines and grows the recorder's lists
				if a := allocs.PerRun(5, run); a != 0 {
					t.Errorf("%s: %v heap allocations per call, want 0", op.name, a)
				}
			}
		})
	}
}
