package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
)

// GPT-2 124M shapes at B=4, T=64.
const (
	bB, bT, bC, bNH = 4, 64, 768, 12
	bV, bVp         = 50257, 50304
	bN              = bB * bT
)

func benchTensor(b *testing.B, be *Backend, n int, scale float64) *tensor.Tensor {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	t, err := tensor.FromSlice(be, randn(r, n, scale), n)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

func benchTokens(b *testing.B, be *Backend, n, V int) *tensor.Tensor {
	t, err := tensor.FromInt32(be, randTokens(rand.New(rand.NewPCG(uint64(n), 2)), n, V), n)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// measure runs fn b.N times and reports GB/s for bytes moved and GFLOP/s for flops per call.
func measure(b *testing.B, bytes, flops float64, fn func()) {
	fn()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		fn()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	if bytes > 0 {
		b.ReportMetric(bytes/sec/1e9, "GB/s")
	}
	if flops > 0 {
		b.ReportMetric(flops/sec/1e9, "GFLOP/s")
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	be := New()
	defer be.Close()
	x, out := benchTensor(b, be, bN*bC, 1), benchTensor(b, be, bN*bC, 0)
	w, bias := benchTensor(b, be, bC, 1), benchTensor(b, be, bC, 1)
	mean, rstd := benchTensor(b, be, bN, 0), benchTensor(b, be, bN, 0)
	measure(b, 4*2*bN*bC, 0, func() { be.LayerNormForward(out, mean, rstd, x, w, bias, bN, bC) })
}

func BenchmarkLayerNormBackward(b *testing.B) {
	be := New()
	defer be.Close()
	x, dout, dx := benchTensor(b, be, bN*bC, 1), benchTensor(b, be, bN*bC, 1), benchTensor(b, be, bN*bC, 0)
	w, dw, db := benchTensor(b, be, bC, 1), benchTensor(b, be, bC, 0), benchTensor(b, be, bC, 0)
	mean, rstd := benchTensor(b, be, bN, 0), benchTensor(b, be, bN, 0)
	be.LayerNormForward(dx, mean, rstd, x, w, dw, bN, bC)
	// x, dout read twice (rows, then columns); dinp read and written.
	measure(b, 4*6*bN*bC, 0, func() { be.LayerNormBackward(dx, dw, db, dout, x, w, mean, rstd, bN, bC) })
}

func BenchmarkGelu(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * 4 * bC
	x, out := benchTensor(b, be, n, 1), benchTensor(b, be, n, 0)
	measure(b, 4*2*float64(n), 0, func() { be.GeluForward(out, x) })
}

func BenchmarkGeluBackward(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * 4 * bC
	x, d, dx := benchTensor(b, be, n, 1), benchTensor(b, be, n, 1), benchTensor(b, be, n, 0)
	measure(b, 4*4*float64(n), 0, func() { be.GeluBackward(dx, x, d) })
}

// attnFlops counts the multiply-adds of q·k and att·v over the causal triangle (2 flops each).
const attnFlops = 2 * 2 * bB * bNH * (bT * (bT + 1) / 2) * (bC / bNH)

func BenchmarkAttention(b *testing.B) {
	be := New()
	defer be.Close()
	qkv, out, att := benchTensor(b, be, bN*3*bC, 1), benchTensor(b, be, bN*bC, 0), benchTensor(b, be, bB*bNH*bT*bT, 0)
	measure(b, 0, attnFlops, func() { be.AttentionForward(out, att, qkv, bB, bT, bC, bNH) })
}

func BenchmarkAttentionBackward(b *testing.B) {
	be := New()
	defer be.Close()
	qkv, out, att := benchTensor(b, be, bN*3*bC, 1), benchTensor(b, be, bN*bC, 0), benchTensor(b, be, bB*bNH*bT*bT, 0)
	dqkv, scratch, dout := benchTensor(b, be, bN*3*bC, 0), benchTensor(b, be, bB*bNH*bT*bT, 0), benchTensor(b, be, bN*bC, 1)
	be.AttentionForward(out, att, qkv, bB, bT, bC, bNH)
	measure(b, 0, 2*attnFlops, func() { be.AttentionBackward(dqkv, scratch, dout, qkv, out, att, bB, bT, bC, bNH) })
}

func BenchmarkAttentionDecode(b *testing.B) {
	be := New()
	defer be.Close()
	const maxT = 1024
	kc, vc := benchTensor(b, be, bB*maxT*bC, 1), benchTensor(b, be, bB*maxT*bC, 1)
	qkv, out := benchTensor(b, be, bB*3*bC, 1), benchTensor(b, be, bB*bC, 0)
	// A full cache, and a short one whose last block of keys is partly filled, as a rollout's
	// first few dozen tokens are. Each reads every cached key and value once.
	for _, n := range []int{maxT, 40} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			pos := n - 1
			measure(b, 4*2*bB*float64(n)*bC, 0, func() { be.AttentionDecode(out, kc, vc, qkv, bB, 1, pos, maxT, bC, bNH) })
		})
	}
}

func BenchmarkEncoder(b *testing.B) {
	be := New()
	defer be.Close()
	wte, wpe := benchTensor(b, be, bVp*bC, 1), benchTensor(b, be, 1024*bC, 1)
	tok, out := benchTokens(b, be, bN, bV), benchTensor(b, be, bN*bC, 0)
	measure(b, 4*3*bN*bC, 0, func() { be.EncoderForward(out, tok, wte, wpe, bB, bT, bC) })
}

func BenchmarkEncoderBackward(b *testing.B) {
	be := New()
	defer be.Close()
	dwte, dwpe := benchTensor(b, be, bVp*bC, 0), benchTensor(b, be, 1024*bC, 0)
	tok, dout := benchTokens(b, be, bN, bV), benchTensor(b, be, bN*bC, 1)
	measure(b, 4*5*bN*bC, 0, func() { be.EncoderBackward(dwte, dwpe, dout, tok, bB, bT, bC) })
}

func BenchmarkCrossEntropy(b *testing.B) {
	be := New()
	defer be.Close()
	logits, probs := benchTensor(b, be, bN*bVp, 2), benchTensor(b, be, bN*bVp, 0)
	tg, losses := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 0)
	measure(b, 4*2*bN*bVp, 0, func() { be.CrossEntropyForward(losses, probs, logits, tg, bN, bV, bVp) })
}

// BenchmarkCrossEntropyFused is the training loss: the softmax turned into its gradient in place.
func BenchmarkCrossEntropyFused(b *testing.B) {
	be := New()
	defer be.Close()
	logits, dlogits := benchTensor(b, be, bN*bVp, 2), benchTensor(b, be, bN*bVp, 0)
	tg, losses := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 0)
	measure(b, 4*2*bN*bVp, 0, func() { be.CrossEntropyFused(losses, dlogits, logits, tg, bN, bV, bVp, 1.0/bN) })
}

func BenchmarkCrossEntropyBackward(b *testing.B) {
	be := New()
	defer be.Close()
	logits, probs, dl := benchTensor(b, be, bN*bVp, 2), benchTensor(b, be, bN*bVp, 0), benchTensor(b, be, bN*bVp, 0)
	tg, losses := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 0)
	be.CrossEntropyForward(losses, probs, logits, tg, bN, bV, bVp)
	measure(b, 4*3*bN*bVp, 0, func() { be.CrossEntropyBackward(dl, probs, tg, losses, bN, bV, bVp) })
}

func BenchmarkLogSoftmaxGather(b *testing.B) {
	be := New()
	defer be.Close()
	logits := benchTensor(b, be, bN*bVp, 2)
	tg, logp, ent := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 0), benchTensor(b, be, bN, 0)
	measure(b, 4*bN*bVp, 0, func() { be.LogSoftmaxGather(logp, ent, logits, tg, nil, bN, bV, bVp, 0.7) })
}

func BenchmarkLogSoftmaxGatherBackward(b *testing.B) {
	be := New()
	defer be.Close()
	logits, dl := benchTensor(b, be, bN*bVp, 2), benchTensor(b, be, bN*bVp, 0)
	tg, dlogp, dent := benchTokens(b, be, bN, bV), benchTensor(b, be, bN, 1), benchTensor(b, be, bN, 1)
	measure(b, 4*3*bN*bVp, 0, func() {
		be.LogSoftmaxGatherBackward(dl, logits, tg, nil, dlogp, dent, bN, bV, bVp, 0.7)
	})
}

// benchParams is a slice of the 124M parameters, large enough to leave the caches.
const benchParams = 1 << 23

func BenchmarkAdamW(b *testing.B) {
	be := New()
	defer be.Close()
	p, g := benchTensor(b, be, benchParams, 1), benchTensor(b, be, benchParams, 1)
	m, v, ss := benchTensor(b, be, benchParams, 0), benchTensor(b, be, benchParams, 0), benchTensor(b, be, 1, 0)
	be.SumSquares(ss, g)
	prm := tensor.AdamWParams{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Step: 1, GradSumSq: ss, MaxNorm: 1}
	measure(b, 4*7*benchParams, 0, func() { be.AdamW(p, g, m, v, prm) })
}

func BenchmarkSumSquares(b *testing.B) {
	be := New()
	defer be.Close()
	g, ss := benchTensor(b, be, benchParams, 1), benchTensor(b, be, 1, 0)
	measure(b, 4*benchParams, 0, func() { be.SumSquares(ss, g) })
}

func BenchmarkAxpy(b *testing.B) {
	be := New()
	defer be.Close()
	x, y := benchTensor(b, be, benchParams, 1), benchTensor(b, be, benchParams, 1)
	measure(b, 4*3*benchParams, 0, func() { be.Axpy(y, 0.5, x) })
}

// BenchmarkMatMul is the attention's qkv projection (llm.c's matmul_forward layout).
func BenchmarkMatMul(b *testing.B) {
	be := New()
	defer be.Close()
	x, w, bias, out := benchTensor(b, be, bN*bC, 1), benchTensor(b, be, 3*bC*bC, 0.02), benchTensor(b, be, 3*bC, 0.1), benchTensor(b, be, bN*3*bC, 0)
	p := tensor.MatMulParams{M: bN, N: 3 * bC, K: bC, TransB: true}
	measure(b, 0, 2*bN*3*bC*bC, func() { be.MatMul(out, x, w, bias, p) })
}

// Qwen2.5-0.5B shapes at B=4, T=64 for the Llama ops: hidden width, MLP width, query and KV
// heads of qD.
const (
	qC, qI, qH, qKV, qD = 896, 4864, 14, 2, 64
)

// measureModes is measure once per kernel mode (llamaModes), as sub-benchmarks named for it
// (the avx512 mode differs from avx2 in SwiGLU only).
func measureModes(b *testing.B, bytes, flops float64, fn func()) {
	defer func(v, w bool) { llamaVector, llamaAVX512 = v, w }(llamaVector, llamaAVX512)
	for _, m := range llamaModes() {
		b.Run(m.name, func(b *testing.B) {
			llamaVector, llamaAVX512 = m.vec, m.wide
			measure(b, bytes, flops, fn)
		})
	}
}

func BenchmarkRMSNorm(b *testing.B) {
	be := New()
	defer be.Close()
	x, out := benchTensor(b, be, bN*qC, 1), benchTensor(b, be, bN*qC, 0)
	w, rstd := benchTensor(b, be, qC, 1), benchTensor(b, be, bN, 0)
	measureModes(b, 4*2*bN*qC, 0, func() { be.RMSNormForward(out, rstd, x, w, bN, qC, 1e-6) })
}

func BenchmarkRMSNormBackward(b *testing.B) {
	be := New()
	defer be.Close()
	x, dout, dx := benchTensor(b, be, bN*qC, 1), benchTensor(b, be, bN*qC, 1), benchTensor(b, be, bN*qC, 0)
	w, dw, rstd := benchTensor(b, be, qC, 1), benchTensor(b, be, qC, 0), benchTensor(b, be, bN, 1)
	measureModes(b, 4*5*bN*qC, 0, func() { be.RMSNormBackward(dx, dw, dout, x, w, rstd, bN, qC) })
}

func BenchmarkSwiGLU(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * qI
	gate, up, out := benchTensor(b, be, n, 2), benchTensor(b, be, n, 1), benchTensor(b, be, n, 0)
	measureModes(b, 4*3*float64(n), 0, func() { be.SwiGLUForward(out, gate, up, n) })
}

func BenchmarkSwiGLUBackward(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * qI
	gate, up, dout := benchTensor(b, be, n, 2), benchTensor(b, be, n, 1), benchTensor(b, be, n, 1)
	dgate, dup := benchTensor(b, be, n, 0), benchTensor(b, be, n, 0)
	measureModes(b, 4*7*float64(n), 0, func() { be.SwiGLUBackward(dgate, dup, gate, up, dout, n) })
}

func BenchmarkRoPE(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * qH * qD
	x, out, table := benchTensor(b, be, n, 1), benchTensor(b, be, n, 0), benchTensor(b, be, bT*qD, 1)
	measureModes(b, 4*2*float64(n), 0, func() { be.RoPEForward(out, x, table, bN, bT, 0, qH, qH, qH*qD) })
}

func BenchmarkRoPEBackward(b *testing.B) {
	be := New()
	defer be.Close()
	n := bN * qH * qD
	dout, dx, table := benchTensor(b, be, n, 1), benchTensor(b, be, n, 0), benchTensor(b, be, bT*qD, 1)
	measureModes(b, 4*3*float64(n), 0, func() { be.RoPEBackward(dx, dout, table, bN, bT, 0, qH, qH, qH*qD) })
}

func BenchmarkPackQKV(b *testing.B) {
	be := New()
	defer be.Close()
	q, k, v := benchTensor(b, be, bN*qH*qD, 1), benchTensor(b, be, bN*qKV*qD, 1), benchTensor(b, be, bN*qKV*qD, 1)
	qkv := benchTensor(b, be, 3*bN*qH*qD, 0)
	measureModes(b, 4*float64(bN*(qH+2*qKV)*qD+3*bN*qH*qD), 0, func() { be.PackQKV(qkv, q, k, v, bN, qH, qKV, qD) })
}

func BenchmarkPackQKVBackward(b *testing.B) {
	be := New()
	defer be.Close()
	dq, dk, dv := benchTensor(b, be, bN*qH*qD, 0), benchTensor(b, be, bN*qKV*qD, 0), benchTensor(b, be, bN*qKV*qD, 0)
	dqkv := benchTensor(b, be, 3*bN*qH*qD, 1)
	measureModes(b, 4*float64(2*bN*(qH+2*qKV)*qD+3*bN*qH*qD), 0, func() { be.PackQKVBackward(dq, dk, dv, dqkv, bN, qH, qKV, qD) })
}
