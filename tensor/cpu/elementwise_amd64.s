//go:build amd64 && !purego

#include "textflag.h"

// func axpyAVX2(y, x *float32, n int, a float32)
// y[i] += a*x[i] for n (a multiple of 8) values, rounding the product then the sum.
TEXT ·axpyAVX2(SB), NOSPLIT, $0-28
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y1

axpyLoop:
	CMPQ CX, $8
	JL   axpyDone
	VMULPS (SI), Y1, Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  axpyLoop

axpyDone:
	VZEROUPPER
	RET
