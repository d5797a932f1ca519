package vk

import "unsafe"

// The push-constant blocks of the shaders, one struct per block, its fields in the block's
// order. A field is named for its GLSL member: the member's '_'-separated parts, each with
// its first letter upper-cased, joined (off_out → OffOut, max_norm → MaxNorm, Tq → Tq).
// Kernels compiled from one block share its struct; a block that extends another under a
// #define embeds the other's struct. TestPushStructsMatchTheirShaders checks every struct
// against its shaders' SPIR-V: names, offsets and 32-bit kinds.

// pushOf views a push-constant struct as the words Dispatch copies. Every struct here holds
// only 32-bit fields, so the view is exactly the block's bytes. One generic view, rather than
// a method per struct listing its fields, leaves each field's position written once (in the
// struct) and the struct on the caller's stack.
func pushOf[T any](v *T) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(v)), unsafe.Sizeof(*v)/4)
}

// One-dimensional kernels (elementwise.go).

type fillPush struct{ N, Off, Bits uint32 }

type copyPush struct{ N, OffDst, OffSrc uint32 }

// binaryPush is the block of add and mul.
type binaryPush struct{ N, OffOut, OffA, OffB uint32 }

type axpyPush struct {
	N, OffY, OffX uint32
	Alpha         float32
}

type scalePush struct {
	N, Off uint32
	S      float32
}

// sumPush is the block of sum.glsl: sum, sumsquares and their subgroup variants.
type sumPush struct{ N, OffOut, OffX uint32 }

type peakFMAPush struct {
	Iters, OffOut uint32
	Seed          float32
}

// Neural-network ops (norm.go, gelu.go, embedding.go, crossentropy.go, elementwise.go).

type layerNormForwardPush struct {
	Rows, C                                      uint32
	OffOut, OffMean, OffRstd, OffInp, OffW, OffB uint32
}

// residualLayerNormForwardPush is layernorm_forward.glsl's block under RESIDUAL.
type residualLayerNormForwardPush struct {
	layerNormForwardPush
	OffA, OffBv uint32
}

type layerNormBackwardPush struct {
	Rows, C                                          uint32
	OffDinp, OffDout, OffInp, OffW, OffMean, OffRstd uint32
}

type layerNormPartialPush struct {
	Rows, Blocks, Rb, C                        uint32
	OffPart, OffDout, OffInp, OffMean, OffRstd uint32
}

type layerNormColsumPush struct {
	Blocks, C             uint32
	OffDw, OffDb, OffPart uint32
}

type geluForwardPush struct {
	N, OffOut, OffInp uint32
	Scaling           float32
}

type geluBackwardPush struct {
	N, OffDinp, OffInp, OffDout uint32
	Scaling                     float32
}

type encoderForwardPush struct {
	Rows, T, C, V0, Vn             uint32
	OffOut, OffTok, OffWte, OffWpe uint32
}

type encoderWtePush struct {
	Rows, C, V0, Vn          uint32
	OffDwte, OffTok, OffDout uint32
}

type encoderWpePush struct{ N, B, OffDwpe, OffDout uint32 }

// crossEntropyForwardPush is crossentropy_forward.glsl's block.
type crossEntropyForwardPush struct {
	Rows, V, Vp                           uint32
	OffLosses, OffProbs, OffLogits, OffTg uint32
}

// crossEntropyFusedPush is crossentropy_forward.glsl's block under FUSED.
type crossEntropyFusedPush struct {
	crossEntropyForwardPush
	Dloss float32
}

type crossEntropyBackwardPush struct {
	Rows, V, Vp                  uint32
	OffD, OffProbs, OffTg, OffDl uint32
}

type logSoftmaxGatherPush struct {
	Rows, V, Vp, HasEnt                       uint32
	InvT                                      float32
	HasCut                                    uint32
	OffLogp, OffEnt, OffLogits, OffTg, OffCut uint32
}

type logSoftmaxGatherBackwardPush struct {
	Rows, V, Vp, HasEnt                               uint32
	InvT                                              float32
	HasCut                                            uint32
	OffD, OffLogits, OffTg, OffDlogp, OffDent, OffCut uint32
}

type dropoutPush struct {
	N, Base, Key            uint32
	Prob, Keep              float32
	OffOut, OffMask, OffInp uint32
}

// Llama ops (norm.go, rope.go, swiglu.go, embedding.go, attention.go).

type rmsNormForwardPush struct {
	Rows, C                       uint32
	OffOut, OffRstd, OffInp, OffW uint32
	Eps                           float32
}

// residualRMSNormForwardPush is rmsnorm_forward.glsl's block under RESIDUAL.
type residualRMSNormForwardPush struct {
	rmsNormForwardPush
	OffA, OffBv uint32
}

type rmsNormBackwardPush struct {
	Rows, C                                 uint32
	OffDinp, OffDout, OffInp, OffW, OffRstd uint32
}

type rmsNormBackwardWeightPush struct {
	Rows, C                         uint32
	OffDw, OffDout, OffInp, OffRstd uint32
}

type ropePush struct {
	Rows, T, Pos0, H, RotHeads, D, Backward uint32
	OffDst, OffSrc, OffTab                  uint32
}

type swigluForwardPush struct{ N, OffOut, OffGate, OffUp uint32 }

type swigluBackwardPush struct {
	N                                         uint32
	OffDgate, OffDup, OffGate, OffUp, OffDout uint32
}

type embeddingForwardPush struct {
	Rows, C, V0, Vn        uint32
	OffOut, OffTok, OffWte uint32
}

type packQKVPush struct {
	Rows, H, KV, D           uint32
	OffQkv, OffQ, OffK, OffV uint32
}

type packQKVBackwardPush struct {
	Rows, H, KV, D               uint32
	OffDq, OffDk, OffDv, OffDqkv uint32
}

// Attention (attention.go).

// flashForwardPush is attention_forward_params.glsl's block: both flash head-size variants and
// the broadcast kernel.
type flashForwardPush struct {
	Tq, NH, Hs, Qstride, Kvstride, Kvbatch, Ostride, Pos, B uint32
	OffOut, OffLse, OffQ, OffK, OffV                        uint32
	Scale                                                   float32
	WriteLse                                                uint32
}

// flashBackwardPush is attention_backward_params.glsl's block: the query and key passes, flash
// and broadcast.
type flashBackwardPush struct {
	T, NH, Hs, C, B                                   uint32
	OffDqkv, OffLse, OffDsum, OffDout, OffQkv, OffOut uint32
	Scale                                             float32
}

type kvCachePush struct {
	N, Tq, C, MaxT, Pos  uint32
	OffKc, OffVc, OffQkv uint32
}

// Matrix products (matmul*.go) and the optimizer (adamw.go).

// matmulPush is the block of matmul, matmul_direct and matmul_broadcast.
type matmulPush struct {
	M, N, K, Lda, Ldb, Ldo             uint32
	OffOut, OffA, OffB, OffBias        uint32
	StrideOut, StrideA, StrideB, Flags uint32
	OffGelu                            uint32
	Scaling                            float32
}

// matmulTiledPush is matmul_tiled.glsl's block: matmulPush and the split along K.
type matmulTiledPush struct {
	matmulPush
	Splits, Ksplit uint32
}

type splitKReducePush struct {
	Total, Mn, N, Splits            uint32
	OffOut, OffPart, OffBias, Flags uint32
	OffGelu                         uint32
	Scaling                         float32
}

type biasBackwardPush struct {
	Rows, Cols, LdIn, LdOut, RowsPer uint32
	OffOut, OffIn, Flags             uint32
}

type adamwPush struct {
	N, OffP, OffG, OffM, OffV, OffS                  uint32
	Lr, B1, Omb1, B2, Omb2, Eps, Wd, C1, C2, MaxNorm float32
	Flags                                            uint32
}
