package vk

import "github.com/vkgrad/vkgrad/tensor"

// The fused neural-network ops: layernorm, GELU, attention, embedding, softmax and losses,
// dropout.

func notImplemented(op string) { panic("vk: " + op + " is not implemented on the Vulkan backend yet") }

func (b *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias *tensor.Tensor, N, C int) {
	notImplemented("LayerNormForward")
}

func (b *Backend) LayerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd *tensor.Tensor, N, C int) {
	notImplemented("LayerNormBackward")
}

func (b *Backend) GeluForward(out, inp *tensor.Tensor) { notImplemented("GeluForward") }

func (b *Backend) GeluBackward(dinp, inp, dout *tensor.Tensor) { notImplemented("GeluBackward") }

func (b *Backend) AttentionForward(out, att, qkv *tensor.Tensor, B, T, C, NH int) {
	notImplemented("AttentionForward")
}

func (b *Backend) AttentionBackward(dqkv, scratch, dout, qkv, att *tensor.Tensor, B, T, C, NH int) {
	notImplemented("AttentionBackward")
}

func (b *Backend) AttentionDecode(out, kcache, vcache, qkv *tensor.Tensor, B, Tq, pos, maxT, C, NH int) {
	notImplemented("AttentionDecode")
}

func (b *Backend) EncoderForward(out, tokens, wte, wpe *tensor.Tensor, B, T, C int) {
	notImplemented("EncoderForward")
}

func (b *Backend) EncoderBackward(dwte, dwpe, dout, tokens *tensor.Tensor, B, T, C int) {
	notImplemented("EncoderBackward")
}

func (b *Backend) CrossEntropyForward(losses, probs, logits, targets *tensor.Tensor, N, V, Vp int) {
	notImplemented("CrossEntropyForward")
}

func (b *Backend) CrossEntropyBackward(dlogits, probs, targets, dlosses *tensor.Tensor, N, V, Vp int) {
	notImplemented("CrossEntropyBackward")
}

func (b *Backend) LogSoftmaxGather(logp, entropy, logits, targets *tensor.Tensor, N, V, Vp int, temperature float32) {
	notImplemented("LogSoftmaxGather")
}

func (b *Backend) LogSoftmaxGatherBackward(dlogits, logits, targets, dlogp, dentropy *tensor.Tensor, N, V, Vp int, temperature float32) {
	notImplemented("LogSoftmaxGatherBackward")
}

func (b *Backend) Dropout(out, mask, inp *tensor.Tensor, p float32, seed uint64) {
	notImplemented("Dropout")
}
