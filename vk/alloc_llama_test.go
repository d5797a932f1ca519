package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/internal/allocs"
	"github.com/vkgrad/vkgrad/internal/race"
	"github.com/vkgrad/vkgrad/tensor"
)

// TestLlamaOpsAllocateNothing is TestOpsAllocateNothing for the Llama family's ops.
func TestLlamaOpsAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocations are not pinned under the race detector (see TestOpsAllocateNothing)")
	}
	const (
		B, T, H, KV, D = 2, 8, 4, 2, 8
		N, C, V        = B * T, H * D, 20
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
			tokens, err := tensor.New(be, tensor.Int32, N)
			if err != nil {
				t.Fatal(err)
			}
			x, y, z, res := f32(N*C), f32(N*C), f32(N*C), f32(N*C)
			w, dw, rstd, table, wte := f32(C), f32(C), f32(N), f32(T*D), f32(V*C)
			q, k, v, qkv := f32(N*C), f32(N*KV*D), f32(N*KV*D), f32(3*N*C)
			be.Fill(w, 1)
			be.Fill(x, 0.5)
			be.Fill(table, 0.25)
			ops := []struct {
				name string
				run  func()
			}{
				{"RMSNormForward", func() { be.RMSNormForward(y, rstd, x, w, N, C, 1e-6) }},
				{"ResidualRMSNormForward", func() { be.ResidualRMSNormForward(res, y, rstd, x, x, w, N, C, 1e-6) }},
				{"RMSNormBackward", func() { be.RMSNormBackward(z, dw, y, x, w, rstd, N, C) }},
				{"RoPEForward", func() { be.RoPEForward(y, x, table, N, T, 0, H, H/2, C) }},
				{"RoPEBackward", func() { be.RoPEBackward(z, y, table, N, T, 0, H, H/2, C) }},
				{"SwiGLUForward", func() { be.SwiGLUForward(z, x, y, N*C) }},
				{"SwiGLUBackward", func() { be.SwiGLUBackward(res, z, x, y, y, N*C) }},
				{"EmbeddingForward", func() { be.EmbeddingForward(y, tokens, wte, N, C) }},
				{"EmbeddingBackward", func() { be.EmbeddingBackward(wte, y, tokens, N, C) }},
				{"PackQKV", func() { be.PackQKV(qkv, q, k, v, N, H, KV, D) }},
				{"PackQKVBackward", func() { be.PackQKVBackward(q, k, v, qkv, N, H, KV, D) }},
			}
			for _, op := range ops {
				run := func() {
					op.run()
					if err := be.Sync(); err != nil {
						t.Errorf("%s: %v", op.name, err)
					}
				}
				run() // builds the pipelines
				if a := allocs.PerRun(5, run); a != 0 {
					t.Errorf("%s: %v heap allocations per call, want 0", op.name, a)
				}
			}
		})
	}
}
