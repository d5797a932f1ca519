package vk

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor"
)

var kRoPE = Kernel{Shader: "rope", Bindings: 3, Push: 10}

// rope runs the rotary embedding forward (dst = rotate(src)) or backward (dst += rotate⁻¹(src)).
func (b *Backend) rope(op string, dst, src, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int, backward bool) {
	nnDims(op, N, T, pos0, H, rotHeads, rowLen)
	if H == 0 || rowLen%H != 0 || (rowLen/H)%2 != 0 || rotHeads > H || (N > 0 && (T == 0 || N%T != 0)) {
		panic(fmt.Sprintf("vk: %s: rows of %d in %d heads (%d rotated), N=%d T=%d: want even heads and N a multiple of T", op, rowLen, H, rotHeads, N, T))
	}
	D := rowLen / H
	ds, ss, ts := nnF32(b, op, "dst", dst, N*rowLen), nnF32(b, op, "src", src, N*rowLen), nnF32(b, op, "table", table, (pos0+T)*D)
	if N == 0 {
		return
	}
	bw, streams := uint32(0), 2.0
	if backward {
		bw, streams = 1, 3 // dst is read too
	}
	b.dev.Cost(3*float64(N*rowLen), 4*(streams*float64(N*rowLen)+float64((pos0+T)*D)))
	// Chunks are whole sequences, so row % T is the position within the chunk too.
	nnRun(b, kRoPE, op, N/T, []nnArg{
		nnRows(ds, dst, T*rowLen, N*rowLen, true), nnRows(ss, src, T*rowLen, N*rowLen, false), nnWhole(ts, table, (pos0+T)*D),
	}, func(cr int) [3]uint32 { return b.nnFlatGroups(cr * T * rowLen / 2) }, func(_, cr int, f firsts) ropePush {
		return ropePush{Rows: uint32(cr * T), T: uint32(T), Pos0: uint32(pos0), H: uint32(H), RotHeads: uint32(rotHeads), D: uint32(D),
			Backward: bw, OffDst: f[0], OffSrc: f[1], OffTab: f[2]}
	})
}

// RoPEForward rotates the first rotHeads heads of each row and copies the rest.
func (b *Backend) RoPEForward(out, inp, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	b.rope("RoPEForward", out, inp, table, N, T, pos0, H, rotHeads, rowLen, false)
}

// RoPEBackward accumulates the gradient through RoPEForward.
func (b *Backend) RoPEBackward(dinp, dout, table *tensor.Tensor, N, T, pos0, H, rotHeads, rowLen int) {
	b.rope("RoPEBackward", dinp, dout, table, N, T, pos0, H, rotHeads, rowLen, true)
}
