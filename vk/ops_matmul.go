package vk

import "github.com/vkgrad/vkgrad/tensor"

// Matrix products, bias gradients and the optimizer step.

func (b *Backend) MatMul(out, a, bm, bias *tensor.Tensor, p tensor.MatMulParams) {
	notImplemented("MatMul")
}

func (b *Backend) BiasBackward(dbias, dout *tensor.Tensor, N, C int) { notImplemented("BiasBackward") }

func (b *Backend) AdamW(params, grads, m, v *tensor.Tensor, p tensor.AdamWParams) {
	notImplemented("AdamW")
}
