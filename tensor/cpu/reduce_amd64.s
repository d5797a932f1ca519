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
