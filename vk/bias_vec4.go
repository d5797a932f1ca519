package vk

import "github.com/vkgrad/vkgrad/tensor"

// biasVec4 is k's twin that sums four columns per invocation (bias_backward_vec4, the same
// bits) and whether BiasBackward may run it: where C and the chunks of cc columns are whole
// vec4s and dbias, dout and the partials' scratch start on one. On lavapipe a quarter of the
// workgroups and loads.
func (b *Backend) biasVec4(k Kernel, C, cc int, scratch *Buffer, dbias, dout *tensor.Tensor, dst, ist *storage) (Kernel, bool) {
	args := []nnArg{{buf: dst.buf, off: dbias.Offset}, {buf: ist.buf, off: dout.Offset}}
	if scratch != nil {
		args = append(args, nnArg{buf: scratch})
	}
	k.Shader = "bias_backward_vec4"
	return k, C%4 == 0 && cc%4 == 0 && vec4Aligned(args)
}

// inVec4s is p with its column counts, leading dimensions and offsets in vec4s.
func (p biasBackwardPush) inVec4s() biasBackwardPush {
	p.Cols, p.LdIn, p.LdOut, p.OffOut, p.OffIn = p.Cols/4, p.LdIn/4, p.LdOut/4, p.OffOut/4, p.OffIn/4
	return p
}
