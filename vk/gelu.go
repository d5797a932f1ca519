package vk

import (
	"math"

	"github.com/vkgrad/vkgrad/tensor"
)

var (
	kGeluForward      = Kernel{Shader: "gelu_forward", Bindings: 2, Push: 4}
	kGeluBackward     = Kernel{Shader: "gelu_backward", Bindings: 3, Push: 5}
	kGeluBackwardVec4 = Kernel{Shader: "gelu_backward_vec4", Bindings: 3, Push: 5}
)

// geluScaling is llm.c's GELU_SCALING_FACTOR, sqrtf(2.0f / M_PI), as the CPU backend rounds it.
var geluScaling = float32(math.Sqrt(float64(float32(2 / math.Pi))))

// GeluForward applies GELU (tanh approximation) elementwise.
func (b *Backend) GeluForward(out, inp *tensor.Tensor) {
	const op = "GeluForward"
	n := out.Numel()
	b.dev.Cost(12*float64(n), 8*float64(n))
	os, is := nnF32(b, op, "out", out, n), nnF32(b, op, "inp", inp, n)
	b.geluForward(nnRows(os, out, 1, n, true), nnRows(is, inp, 1, n, false), n)
}

// geluForward records gelu_forward over n elements of inp into out.
func (b *Backend) geluForward(out, inp nnArg, n int) {
	nnRun(b, kGeluForward, "GeluForward", n, []nnArg{out, inp}, b.nnFlatGroups,
		func(_, cn int, f firsts) geluForwardPush {
			return geluForwardPush{N: uint32(cn), OffOut: f[0], OffInp: f[1], Scaling: geluScaling}
		})
}

// GeluBackward accumulates dinp += gelu'(inp) * dout.
func (b *Backend) GeluBackward(dinp, inp, dout *tensor.Tensor) {
	const op = "GeluBackward"
	n := dinp.Numel()
	ds, is, os := nnF32(b, op, "dinp", dinp, n), nnF32(b, op, "inp", inp, n), nnF32(b, op, "dout", dout, n)
	args := []nnArg{nnRows(ds, dinp, 1, n, true), nnRows(is, inp, 1, n, false), nnRows(os, dout, 1, n, false)}
	b.dev.Cost(18*float64(n), 16*float64(n)) // dinp is read and written
	// vec4s: a quarter of the loads and stores.
	k, per := elemWidth(kGeluBackward, kGeluBackwardVec4, n, args)
	u := uint32(per)
	nnRun(b, k, op, n/per, args, b.nnFlatGroups, func(_, cn int, f firsts) geluBackwardPush {
		return geluBackwardPush{N: uint32(cn), OffDinp: f[0] / u, OffInp: f[1] / u, OffDout: f[2] / u, Scaling: geluScaling}
	})
}
