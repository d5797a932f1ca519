//go:build amd64 && !purego

#include "textflag.h"

// Attention kernels. Every lane adds its terms in the order the Go code does, with separate
// multiplies and adds (no FMA), so results equal the portable code bit for bit.

// func dots8AVX2(q, kt *float32, hs, nblk int, out *float32)
// For nblk blocks of 8 keys packed by packKT: out[b*8+j] = sum over i of q[i]*kt[(b*hs+i)*8+j],
// added in order of i. hs >= 1.
TEXT ·dots8AVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ kt+8(FP), DX
	MOVQ hs+16(FP), R8
	MOVQ nblk+24(FP), CX
	MOVQ out+32(FP), DI
	MOVQ R8, R9
	SHLQ $5, R9 // bytes per block: hs*8*4

d4:
	CMPQ CX, $4
	JL   d1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, AX
	MOVQ DX, BX
	LEAQ (BX)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	MOVQ R8, R10

d4i:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS (R11), Y4, Y6
	VADDPS Y6, Y1, Y1
	VMULPS (R12), Y4, Y7
	VADDPS Y7, Y2, Y2
	VMULPS (R13), Y4, Y8
	VADDPS Y8, Y3, Y3
	ADDQ $4, AX
	ADDQ $32, BX
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	DECQ R10
	JNZ  d4i
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	LEAQ (DX)(R9*4), DX
	SUBQ $4, CX
	JMP  d4

d1:
	CMPQ CX, $1
	JL   ddone
	VXORPS Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R8, R10

d1i:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	ADDQ $4, AX
	ADDQ $32, BX
	DECQ R10
	JNZ  d1i
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ R9, DX
	DECQ CX
	JMP  d1

ddone:
	VZEROUPPER
	RET

// func attnAVAVX2(out, att, v *float32, stride, n, hs8 int)
// out[i] = sum over t2 < n of att[t2]*v[t2*stride+i], added in order of t2, for i < hs8 (a
// multiple of 8). stride is in elements.
TEXT ·attnAVAVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ att+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), R8
	MOVQ hs8+40(FP), CX

av32:
	CMPQ CX, $32
	JL   av8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R8, R10
	TESTQ R10, R10
	JZ   av32s

av32i:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS 32(BX), Y4, Y6
	VADDPS Y6, Y1, Y1
	VMULPS 64(BX), Y4, Y7
	VADDPS Y7, Y2, Y2
	VMULPS 96(BX), Y4, Y8
	VADDPS Y8, Y3, Y3
	ADDQ $4, AX
	ADDQ R9, BX
	DECQ R10
	JNZ  av32i

av32s:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, DX
	SUBQ $32, CX
	JMP  av32

av8:
	CMPQ CX, $8
	JL   avdone
	VXORPS Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ DX, BX
	MOVQ R8, R10
	TESTQ R10, R10
	JZ   av8s

av8i:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	ADDQ $4, AX
	ADDQ R9, BX
	DECQ R10
	JNZ  av8i

av8s:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  av8

avdone:
	VZEROUPPER
	RET

// func attnDVAVX2(dv *float32, stride int, att, d *float32, n, hs8 int)
// For t2 < n: dv[t2*stride+i] += att[t2]*d[i] for i < hs8 (a multiple of 8).
TEXT ·attnDVAVX2(SB), NOSPLIT, $0-48
	MOVQ dv+0(FP), DI
	MOVQ stride+8(FP), R9
	SHLQ $2, R9
	MOVQ att+16(FP), SI
	MOVQ d+24(FP), DX
	MOVQ n+32(FP), R8
	MOVQ hs8+40(FP), R11

dvt:
	TESTQ R8, R8
	JZ   dvdone
	VBROADCASTSS (SI), Y4
	MOVQ DI, BX
	MOVQ DX, AX
	MOVQ R11, CX

dvi:
	CMPQ CX, $8
	JL   dvnext
	VMULPS (AX), Y4, Y5
	VADDPS (BX), Y5, Y5
	VMOVUPS Y5, (BX)
	ADDQ $32, AX
	ADDQ $32, BX
	SUBQ $8, CX
	JMP  dvi

dvnext:
	ADDQ $4, SI
	ADDQ R9, DI
	DECQ R8
	JMP  dvt

dvdone:
	VZEROUPPER
	RET

// func attnDQDKAVX2(dq, k, dk *float32, stride int, q, ds *float32, n, hs8 int)
// For each i < hs8 (a multiple of 8): dq[i] += k[t2*stride+i]*ds[t2] over t2 < n in order, and
// dk[t2*stride+i] += q[i]*ds[t2].
TEXT ·attnDQDKAVX2(SB), NOSPLIT, $0-64
	MOVQ dq+0(FP), DI
	MOVQ k+8(FP), R12
	MOVQ dk+16(FP), R13
	MOVQ stride+24(FP), R9
	SHLQ $2, R9
	MOVQ q+32(FP), R14
	MOVQ ds+40(FP), SI
	MOVQ n+48(FP), R8
	MOVQ hs8+56(FP), CX

qk16:
	CMPQ CX, $16
	JL   qk8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (R14), Y2
	VMOVUPS 32(R14), Y3
	MOVQ SI, AX
	MOVQ R12, BX
	MOVQ R13, DX
	MOVQ R8, R10
	TESTQ R10, R10
	JZ   qk16s

qk16t:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS 32(BX), Y4, Y6
	VADDPS Y6, Y1, Y1
	VMULPS Y2, Y4, Y7
	VADDPS (DX), Y7, Y7
	VMOVUPS Y7, (DX)
	VMULPS Y3, Y4, Y8
	VADDPS 32(DX), Y8, Y8
	VMOVUPS Y8, 32(DX)
	ADDQ $4, AX
	ADDQ R9, BX
	ADDQ R9, DX
	DECQ R10
	JNZ  qk16t

qk16s:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	SUBQ $16, CX
	JMP  qk16

qk8:
	CMPQ CX, $8
	JL   qkdone
	VMOVUPS (DI), Y0
	VMOVUPS (R14), Y2
	MOVQ SI, AX
	MOVQ R12, BX
	MOVQ R13, DX
	MOVQ R8, R10
	TESTQ R10, R10
	JZ   qk8s

qk8t:
	VBROADCASTSS (AX), Y4
	VMULPS (BX), Y4, Y5
	VADDPS Y5, Y0, Y0
	VMULPS Y2, Y4, Y7
	VADDPS (DX), Y7, Y7
	VMOVUPS Y7, (DX)
	ADDQ $4, AX
	ADDQ R9, BX
	ADDQ R9, DX
	DECQ R10
	JNZ  qk8t

qk8s:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, R14
	SUBQ $8, CX
	JMP  qk8

qkdone:
	VZEROUPPER
	RET
