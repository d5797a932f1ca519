package vk

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// BenchmarkMatMulGPT2 times the products of a GPT-2 124M layer on 256 rows (forward x @ W^T
// with bias, as nn.Linear calls it): qkv, attention projection, MLP up and down. It reports
// GFLOP/s (2·M·N·K per product); on lavapipe the figures measure the CPU, on a GPU the kernel.
func BenchmarkMatMulGPT2(b *testing.B) {
	const M = 256
	for _, nk := range [][2]int{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}} {
		N, K := nk[0], nk[1]
		b.Run(fmt.Sprintf("M%d_N%d_K%d", M, N, K), func(b *testing.B) {
			be := benchBackend(b)
			x, w, bias, out := linearOperands(be, M, N, K)
			p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
			be.MatMul(out, x, w, bias, p) // builds the pipeline
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				be.MatMul(out, x, w, bias, p)
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(M*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMulGelu times GPT-2 124M's MLP up-projection on 256 rows with its bias and
// GELU: fused (MatMulParams.GeluOut) against MatMul then GeluForward.
func BenchmarkMatMulGelu(b *testing.B) {
	const M, N, K = 256, 3072, 768
	for _, fused := range []bool{true, false} {
		b.Run(fmt.Sprintf("fused=%v", fused), func(b *testing.B) {
			be := benchBackend(b)
			x, w, bias, out := linearOperands(be, M, N, K)
			gelu, _ := tensor.New(be, tensor.Float32, M, N)
			p := tensor.MatMulParams{M: M, N: N, K: K, TransB: true}
			run := func() {
				if fused {
					q := p
					q.GeluOut = gelu
					be.MatMul(out, x, w, bias, q)
				} else {
					be.MatMul(out, x, w, bias, p)
					be.GeluForward(gelu, out)
				}
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			run() // builds the pipelines
			for b.Loop() {
				run()
			}
		})
	}
}

// linearOperands are nn.Linear's operands on be: random rows x (M, K), weights w (N, K) and
// bias (N), and out (M, N).
func linearOperands(be *Backend, M, N, K int) (x, w, bias, out *tensor.Tensor) {
	r := rand.New(rand.NewPCG(1, 1))
	x, _ = tensor.FromSlice(be, randVec(r, M*K), M, K)
	w, _ = tensor.FromSlice(be, randVec(r, N*K), N, K)
	bias, _ = tensor.FromSlice(be, randVec(r, N), N)
	out, _ = tensor.New(be, tensor.Float32, M, N)
	return x, w, bias, out
}
