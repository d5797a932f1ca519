package vk

import "github.com/vkgrad/vkgrad/tensor"

var (
	kSwiGLUForward  = Kernel{Shader: "swiglu_forward", Bindings: 3, Push: 4}
	kSwiGLUBackward = Kernel{Shader: "swiglu_backward", Bindings: 5, Push: 6}
)

// SwiGLUForward sets out = silu(gate) * up elementwise.
func (b *Backend) SwiGLUForward(out, gate, up *tensor.Tensor, n int) {
	const op = "SwiGLUForward"
	nnDims(op, n)
	os, gs, us := nnF32(b, op, "out", out, n), nnF32(b, op, "gate", gate, n), nnF32(b, op, "up", up, n)
	b.dev.Cost(6*float64(n), 12*float64(n))
	nnRun(b, kSwiGLUForward, op, n, []nnArg{nnRows(os, out, 1, n, true), nnRows(gs, gate, 1, n, false), nnRows(us, up, 1, n, false)},
		b.nnFlatGroups, func(_, cn int, f firsts) swigluForwardPush {
			return swigluForwardPush{N: uint32(cn), OffOut: f[0], OffGate: f[1], OffUp: f[2]}
		})
}

// SwiGLUBackward accumulates the gradients of gate and up.
func (b *Backend) SwiGLUBackward(dgate, dup, gate, up, dout *tensor.Tensor, n int) {
	const op = "SwiGLUBackward"
	nnDims(op, n)
	dgs, dus := nnF32(b, op, "dgate", dgate, n), nnF32(b, op, "dup", dup, n)
	gs, us, os := nnF32(b, op, "gate", gate, n), nnF32(b, op, "up", up, n), nnF32(b, op, "dout", dout, n)
	b.dev.Cost(12*float64(n), 28*float64(n)) // gate, up and dout read; dgate and dup read and written
	nnRun(b, kSwiGLUBackward, op, n, []nnArg{
		nnRows(dgs, dgate, 1, n, true), nnRows(dus, dup, 1, n, true), nnRows(gs, gate, 1, n, false), nnRows(us, up, 1, n, false), nnRows(os, dout, 1, n, false),
	}, b.nnFlatGroups, func(_, cn int, f firsts) swigluBackwardPush {
		return swigluBackwardPush{N: uint32(cn), OffDgate: f[0], OffDup: f[1], OffGate: f[2], OffUp: f[3], OffDout: f[4]}
	})
}
