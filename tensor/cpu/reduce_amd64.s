//go:build amd64 && !purego

#include "textflag.h"

// func sumLanesAVX2(x *float32, n int, acc *[16]float64, squares bool)
// acc[l] += x[i] (or x[i]², fused) for i%16 == l, n a multiple of 16.
TEXT ·sumLanesAVX2(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ acc+16(FP), DI
	MOVBLZX squares+24(FP), AX
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	TESTQ AX, AX
	JZ   sumLoop

sqLoop:
	CMPQ CX, $16
	JL   sumDone
	VCVTPS2PD 0(SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  sqLoop

sumLoop:
	CMPQ CX, $16
	JL   sumDone
	VCVTPS2PD 0(SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $64, SI
	SUBQ $16, CX
	JMP  sumLoop

sumDone:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func colSum32AVX2(db, d *float32, rows, stride int)
// db[i] += d[r*stride+i] for 32 columns i, rows r in order.
TEXT ·colSum32AVX2(SB), NOSPLIT, $0-32
	MOVQ db+0(FP), DI
	MOVQ d+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $2, DX
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3

colLoop:
	VADDPS 0(SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ DX, SI
	DECQ CX
	JNZ  colLoop
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

// LNCOL8(off) handles columns off..off+7 of one row: DB and DW accumulators are the given
// registers; Y12 = mean, Y13 = rstd broadcast.
#define LNCOL8(off, DB, DW) \
	VMOVUPS off(SI), Y14; \
	VMOVUPS off(DX), Y15; \
	VSUBPS Y12, Y14, Y14; \
	VMULPS Y13, Y14, Y14; \
	VADDPS Y15, DB, DB; \
	VMULPS Y15, Y14, Y14; \
	VADDPS Y14, DW, DW;

// func lnCol32AVX2(dw, db, x, d, mean, rstd *float32, rows, stride int)
// For 32 columns: db += d and dw += ((x-mean[r])·rstd[r])·d over rows r in order.
TEXT ·lnCol32AVX2(SB), NOSPLIT, $0-64
	MOVQ dw+0(FP), DI
	MOVQ db+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ d+24(FP), DX
	MOVQ mean+32(FP), R9
	MOVQ rstd+40(FP), R10
	MOVQ rows+48(FP), CX
	MOVQ stride+56(FP), R11
	SHLQ $2, R11
	VMOVUPS 0(R8), Y0
	VMOVUPS 32(R8), Y1
	VMOVUPS 64(R8), Y2
	VMOVUPS 96(R8), Y3
	VMOVUPS 0(DI), Y4
	VMOVUPS 32(DI), Y5
	VMOVUPS 64(DI), Y6
	VMOVUPS 96(DI), Y7

lnLoop:
	VBROADCASTSS (R9), Y12
	VBROADCASTSS (R10), Y13
	LNCOL8(0, Y0, Y4)
	LNCOL8(32, Y1, Y5)
	LNCOL8(64, Y2, Y6)
	LNCOL8(96, Y3, Y7)
	ADDQ R11, SI
	ADDQ R11, DX
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ CX
	JNZ  lnLoop
	VMOVUPS Y0, 0(R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	VMOVUPS Y4, 0(DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	VZEROUPPER
	RET

DATA lnc<>+0(SB)/4, $0x3727c5ac // 1e-5
DATA lnc<>+4(SB)/4, $0x3f800000 // 1
GLOBL lnc<>(SB), RODATA|NOPTR, $8

// HSUM8 sets the low lane of X to ((y0+y4)+(y2+y6)) + ((y1+y5)+(y3+y7)) of the eight lanes of
// Y (X is Y's low half), as lanes8Sum. Clobbers T.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS T, X, X; \
	VMOVHLPS X, X, T; \
	VADDPS T, X, X; \
	VMOVSHDUP X, T; \
	VADDSS T, X, X;

// func lnFwdRowAVX2(out, x, w, b *float32, n int, cf float32, stats *[2]float32)
// lnForwardRow for n (a multiple of 8, > 0) columns; cf = float32(n). stats gets mean, rstd.
TEXT ·lnFwdRowAVX2(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ n+32(FP), BX
	SHLQ $2, BX
	VMOVSS cf+40(FP), X1
	MOVQ stats+48(FP), R10

	VXORPS Y0, Y0, Y0
	XORQ AX, AX
lnfMean:
	VADDPS (SI)(AX*1), Y0, Y0
	ADDQ $32, AX
	CMPQ AX, BX
	JL   lnfMean
	HSUM8(Y0, X0, X6)
	VDIVSS X1, X0, X0
	VBROADCASTSS X0, Y2

	VXORPS Y3, Y3, Y3
	XORQ AX, AX
lnfVar:
	VMOVUPS (SI)(AX*1), Y4
	VSUBPS Y2, Y4, Y4
	VMULPS Y4, Y4, Y4
	VADDPS Y4, Y3, Y3
	ADDQ $32, AX
	CMPQ AX, BX
	JL   lnfVar
	HSUM8(Y3, X3, X6)
	VDIVSS X1, X3, X3
	VADDSS lnc<>+0(SB), X3, X3
	VSQRTSS X3, X3, X3
	VMOVSS lnc<>+4(SB), X5
	VDIVSS X3, X5, X5
	VMOVSS X0, 0(R10)
	VMOVSS X5, 4(R10)
	VBROADCASTSS X5, Y5

	XORQ AX, AX
lnfOut:
	VMOVUPS (SI)(AX*1), Y4
	VSUBPS Y2, Y4, Y4
	VMULPS Y5, Y4, Y4
	VMULPS (R8)(AX*1), Y4, Y4
	VADDPS (R9)(AX*1), Y4, Y4
	VMOVUPS Y4, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, BX
	JL   lnfOut
	VZEROUPPER
	RET

// func lnBwdRowAVX2(dinp, dout, x, w *float32, n int, m, s, cf float32)
// lnBackwardRow for n (a multiple of 8, > 0) columns; cf = float32(n).
TEXT ·lnBwdRowAVX2(SB), NOSPLIT, $0-52
	MOVQ dinp+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ n+32(FP), BX
	SHLQ $2, BX
	VBROADCASTSS m+40(FP), Y2
	VBROADCASTSS s+44(FP), Y3
	VMOVSS cf+48(FP), X7

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ AX, AX
lnbSums:
	VMOVUPS (SI)(AX*1), Y4
	VSUBPS Y2, Y4, Y4
	VMULPS Y3, Y4, Y4
	VMOVUPS (R8)(AX*1), Y5
	VMULPS (DX)(AX*1), Y5, Y5
	VADDPS Y5, Y0, Y0
	VMULPS Y4, Y5, Y5
	VADDPS Y5, Y1, Y1
	ADDQ $32, AX
	CMPQ AX, BX
	JL   lnbSums
	HSUM8(Y0, X0, X6)
	HSUM8(Y1, X1, X6)
	VDIVSS X7, X0, X0
	VDIVSS X7, X1, X1
	VBROADCASTSS X0, Y0
	VBROADCASTSS X1, Y1

	XORQ AX, AX
lnbOut:
	VMOVUPS (SI)(AX*1), Y4
	VSUBPS Y2, Y4, Y4
	VMULPS Y3, Y4, Y4
	VMOVUPS (R8)(AX*1), Y5
	VMULPS (DX)(AX*1), Y5, Y5
	VSUBPS Y0, Y5, Y5
	VMULPS Y1, Y4, Y4
	VSUBPS Y4, Y5, Y5
	VMULPS Y3, Y5, Y5
	VADDPS (DI)(AX*1), Y5, Y5
	VMOVUPS Y5, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, BX
	JL   lnbOut
	VZEROUPPER
	RET

// func fillStreamAVX2(x *float32, n int, v float32)
// x[i] = v for n (a multiple of 8) values at a 32-byte aligned x, with non-temporal stores:
// a large fill then costs one write per line instead of a read and a write.
TEXT ·fillStreamAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS v+16(FP), Y0

fsLoop:
	CMPQ CX, $32
	JL   fsTail
	VMOVNTPS Y0, 0(DI)
	VMOVNTPS Y0, 32(DI)
	VMOVNTPS Y0, 64(DI)
	VMOVNTPS Y0, 96(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  fsLoop

fsTail:
	CMPQ CX, $8
	JL   fsDone
	VMOVNTPS Y0, 0(DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  fsTail

fsDone:
	SFENCE
	VZEROUPPER
	RET
