package cpu

import "github.com/vkgrad/vkgrad/tensor"

// swiglu_amd64.s's generator is named here, in a file every architecture builds (arm64's
// kernels are exp32_neon_gen.go's, named in gelu.go).
//
//go:generate go run swiglu_gen.go

// sigmoidf is 1/(1+e^-x) in float32 steps.
func sigmoidf(x float32) float32 { return 1 / (1 + expf32(-x)) }

// swigluRange writes silu(gate)·up.
func swigluRange(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	n := swigluVector(out, gate, up)
	swigluRangeGo(out[n:], gate[n:], up[n:])
}

func swigluRangeGo(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	for i, g := range gate {
		out[i] = float32(g*sigmoidf(g)) * up[i]
	}
}

// swigluBackwardRange accumulates the gradients of gate and up.
func swigluBackwardRange(dgate, dup, gate, up, dout []float32) {
	n := len(dout)
	dgate, dup, gate, up = dgate[:n], dup[:n], gate[:n], up[:n]
	v := swigluBackwardVector(dgate, dup, gate, up, dout)
	swigluBackwardRangeGo(dgate[v:], dup[v:], gate[v:], up[v:], dout[v:])
}

func swigluBackwardRangeGo(dgate, dup, gate, up, dout []float32) {
	n := len(dout)
	dgate, dup, gate, up = dgate[:n], dup[:n], gate[:n], up[:n]
	for i, g := range gate {
		sg := sigmoidf(g)
		dup[i] += float32(dout[i] * float32(g*sg))
		dgate[i] += float32(float32(dout[i]*up[i]) * float32(sg*(1+float32(g*(1-sg)))))
	}
}

// SwiGLUForward implements tensor.Backend.
func (b *Backend) SwiGLUForward(out, gate, up *tensor.Tensor, n int) {
	defer b.unlock(b.lock("SwiGLUForward"))
	const op = "SwiGLUForward"
	dims(op, n)
	if n == 0 {
		return
	}
	b.llama = llamaJob{kind: swigluForward, n: n, rows: ewChunk,
		out: f32(op, "out", out, n), inp: f32(op, "gate", gate, n), w: f32(op, "up", up, n)}
	b.runLlama(true)
}

// SwiGLUBackward implements tensor.Backend.
func (b *Backend) SwiGLUBackward(dgate, dup, gate, up, dout *tensor.Tensor, n int) {
	defer b.unlock(b.lock("SwiGLUBackward"))
	const op = "SwiGLUBackward"
	dims(op, n)
	if n == 0 {
		return
	}
	b.llama = llamaJob{kind: swigluBackward, n: n, rows: ewChunk,
		dinp: f32(op, "dgate", dgate, n), dw: f32(op, "dup", dup, n), inp: f32(op, "gate", gate, n), w: f32(op, "up", up, n),
		dout: f32(op, "dout", dout, n)}
	b.runLlama(true)
}
