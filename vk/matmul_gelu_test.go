package vk

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// mmGeluCheck runs backendtest.CheckMatMulGelu (the fused product gives the separate ops'
// bits, in place too, and its GELU is GELU against the formula in float64) and checks that
// Vulkan ran no gelu_forward for the fused product.
func mmGeluCheck(t *testing.T, be tensor.Backend, c backendtest.MatMulCase, seed uint64) {
	t.Helper()
	if vb, ok := be.(*Backend); ok {
		// The epilogue stores GELU: no separate pass.
		calls := mmRunKernels(t, vb, func() { backendtest.MatMulGelu(t, be, c, seed) })
		if vb.dev.Info.TimestampBits > 0 && calls["gelu_forward"] != 0 {
			t.Fatalf("%v: kernels %v, want no gelu_forward", c, calls)
		}
	}
	backendtest.CheckMatMulGelu(t, be, c, seed, "")
}

// TestMatMulGeluFused: on every kernel, chunked and split along K, a product with GeluOut
// gives the bits of MatMul followed by GeluForward (its epilogue shares gelu_forward's
// gelu.glsl); on the CPU backend too.
func TestMatMulGeluFused(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	t.Cleanup(func() { mmForceShader, mmForceSplits = "", 0 })
	t.Run("cpu", func(t *testing.T) {
		for i, c := range backendtest.MatMulGeluCases() {
			mmGeluCheck(t, cpu.New(), c, uint64(10+i))
		}
	})
	for _, k := range mmKernels {
		t.Run(k, func(t *testing.T) {
			mmForceShader = k
			for i, c := range backendtest.MatMulGeluCases() {
				mmGeluCheck(t, vb, c, uint64(20+i))
			}
		})
	}
	t.Run("splitk", func(t *testing.T) {
		mmForceShader, mmForceSplits = "matmul_tiled", 3
		defer func() { mmForceSplits = 0 }()
		split := false
		for i, c := range backendtest.MatMulGeluCases() {
			calls := mmRunKernels(t, vb, func() { mmGeluCheck(t, vb, c, uint64(40+i)) })
			k, err := vb.mmKernelFor(c.M, c.N, max(c.Batch, 1))
			if err != nil {
				t.Fatal(err)
			}
			splits, _ := vb.mmSplitPlan(tensor.MatMulParams{M: c.M, N: c.N, K: c.K, Batch: c.Batch}, k.tile)
			if vb.dev.Info.TimestampBits > 0 && (calls["matmul_splitk_reduce"] > 0) != (splits > 1) {
				t.Fatalf("%v: kernels %v, planned %d splits", c, calls, splits)
			}
			split = split || splits > 1
		}
		if !split {
			t.Fatal("no case was split along K")
		}
	})
	t.Run("chunked", func(t *testing.T) {
		limit := vb.maxChunk
		vb.maxChunk = 1000
		defer func() { vb.maxChunk = limit }()
		for _, k := range mmKernels {
			mmForceShader = k
			for i, c := range backendtest.MatMulGeluCases() {
				mmGeluCheck(t, vb, c, uint64(60+i))
			}
		}
	})
}

// mmGeluGrads runs the product and GELU on vb, fused (autograd.MatMulGelu) or as MatMul then
// Gelu, backpropagates a random dgelu and returns out, gelu and the gradients of a, b, bias.
func mmGeluGrads(t *testing.T, vb *Backend, p tensor.MatMulParams, seed uint64, fused bool) [][]float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	batch := max(p.Batch, 1)
	v := func(n int, init bool) *autograd.Var {
		x, err := autograd.NewVar(vb, true, n)
		if err != nil {
			t.Fatal(err)
		}
		if init {
			if err := vb.Upload(x.Value, randVec(r, n)); err != nil {
				t.Fatal(err)
			}
		}
		return x
	}
	a, bm, bias := v(batch*p.M*p.K, true), v(batch*p.K*p.N, true), v(p.N, true)
	out, gelu := v(batch*p.M*p.N, false), v(batch*p.M*p.N, false)
	if err := vb.Upload(gelu.Grad, randVec(r, batch*p.M*p.N)); err != nil {
		t.Fatal(err)
	}
	tp := autograd.NewTape()
	if fused {
		autograd.MatMulGelu(tp, out, gelu, a, bm, bias, p)
	} else {
		autograd.MatMul(tp, out, a, bm, bias, p)
		autograd.Gelu(tp, gelu, out)
	}
	tp.Backward()
	var res [][]float32
	for _, x := range []*tensor.Tensor{out.Value, gelu.Value, out.Grad, a.Grad, bm.Grad, bias.Grad} {
		res = append(res, download(t, vb, x))
	}
	return res
}

// TestMatMulGeluGradients: on every kernel, the fused op's values and gradients are the bits
// of MatMul followed by Gelu.
func TestMatMulGeluGradients(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	t.Cleanup(func() { mmForceShader = "" })
	names := []string{"out", "gelu", "dout", "da", "db", "dbias"}
	cases := []tensor.MatMulParams{{M: 48, N: 128, K: 32, TransB: true}, {M: 13, N: 37, K: 21, TransA: true, Batch: 2}}
	for _, k := range mmKernels {
		mmForceShader = k
		for i, p := range cases {
			fused, sep := mmGeluGrads(t, vb, p, uint64(i), true), mmGeluGrads(t, vb, p, uint64(i), false)
			for j := range fused {
				assertExact(t, fmt.Sprintf("%s %+v %s", k, p, names[j]), fused[j], sep[j])
			}
		}
	}
}
