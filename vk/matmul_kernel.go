package vk

import "github.com/vkgrad/vkgrad/tensor"

// mmKernel is the kernel chosen for a product: its shader and tile, the workgroup of the
// broadcast kernel, or the whole Kernel of the fixed-tile ones.
type mmKernel struct {
	shader string
	tile   mmTile
	bc     mmBroadcast // matmul_broadcast
	cm     mmCoopMat   // matmul_coopmat and matmul_coopmat_khr
	fixed  Kernel      // matmul and matmul_direct
	round  uint32      // matmul_tiled: mmRoundBf16 or mmRoundF16 in bf16 and fp16, else 0

	// rowsInX lays row tiles along the workgroup grid's x (see mmKernelFor).
	rowsInX bool
}

// tiled says whether k takes matmul_tiled's push constants and split-K, as matmul_coopmat does.
func (k mmKernel) tiled() bool { return k.shader == "matmul_tiled" || k.coopMat() }
func (k mmKernel) coopMat() bool {
	return k.shader == mmCoopMatKernel || k.shader == mmCoopMatKHRKernel
}
func (k mmKernel) broadcast() bool { return k.shader == "matmul_broadcast" }

// mmKernelFor picks the kernel and tile of a batch of M x N products.
func (b *Backend) mmKernelFor(M, N, batch int) (mmKernel, error) {
	k := mmKernel{shader: b.mmShader()}
	switch {
	case k.coopMat():
		k.cm = *b.coopMatFor(k.shader)
		k.tile = k.cm.tile()
	case k.tiled():
		tile, err := b.mmTileFor(M, N, batch)
		if err != nil {
			return k, err
		}
		k.tile, k.round = tile, b.mmRoundMode()
	case k.broadcast():
		k.bc = b.mmBroadcastFor()
		k.tile = k.bc.tile()
		// The broadcast kernel walks the smaller operand again for each tile of the other:
		// with row tiles along x, consecutive workgroups share one block of B (the lm head's
		// 50304 rows of wte, far beyond the caches, are then read once).
		k.rowsInX = M < N
	default:
		local := b.mmLocal(M, N, batch)
		k.tile = mmTile{BM: int(local[1]) * mmTM, BN: int(local[0]) * mmTN, BK: mmBK, TM: mmTM, TN: mmTN}
		k.fixed = Kernel{Shader: k.shader, Bindings: 5, Push: 16, Local: [3]uint32{local[0], local[1], 1}}
	}
	return k, nil
}

// forChunk is the kernel that computes chunk c bound to args: the tiled and broadcast kernels
// read vec4s where the chunk's operands allow.
func (k mmKernel) forChunk(info DeviceInfo, p tensor.MatMulParams, c mmChunk, args [5]Arg) Kernel {
	lda, ldb := mmLeading(p)
	offOut, offA, offB := args[0].W.First, args[1].W.First, args[2].W.First
	switch {
	case k.coopMat():
		return k.cm.kernel(mmVec4(p, offA, offB, c.mn, c.nn, c.kn, lda, ldb))
	case k.tiled():
		return k.tile.kernel(mmVec4(p, offA, offB, c.mn, c.nn, c.kn, lda, ldb), k.round)
	case k.broadcast():
		// Out, and GELU's output, are stored as vec4s too.
		vec4 := mmVec4(p, offA, offB, c.mn, c.nn, c.kn, lda, ldb) && offOut%4 == 0 && args[4].W.First%4 == 0 && p.N%4 == 0 && c.nn%4 == 0
		return k.bc.kernel(info, mmTransFlags(p), vec4)
	}
	return k.fixed
}

// groups is the workgroup grid of chunk c: one workgroup per tile, one layer per batch.
func (k mmKernel) groups(c mmChunk) [3]uint32 {
	g := [3]uint32{uint32(mmCeilDiv(c.nn, k.tile.BN)), uint32(mmCeilDiv(c.mn, k.tile.BM)), uint32(c.zn)}
	if k.rowsInX {
		g[0], g[1] = g[1], g[0]
	}
	return g
}

// mmLeading is the row length of each operand as stored.
func mmLeading(p tensor.MatMulParams) (lda, ldb int) {
	lda, ldb = p.K, p.N
	if p.TransA {
		lda = p.M
	}
	if p.TransB {
		ldb = p.K
	}
	return lda, ldb
}

// mmTransFlags are the flags saying which operands are stored transposed.
func mmTransFlags(p tensor.MatMulParams) uint32 {
	var f uint32
	if p.TransA {
		f |= mmTransA
	}
	if p.TransB {
		f |= mmTransB
	}
	return f
}
