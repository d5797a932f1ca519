//go:build amd64 && !purego

#include "textflag.h"
#include "exp64_amd64.h"
#include "exp32_amd64.h"

// func expAVX2(x *float64, n int)
// x[i] = e^x[i] for n (a multiple of 4) values.
TEXT ·expAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	EXPCONSTS
expLoop:
	CMPQ CX, $4
	JL   expDone
	VMOVUPD (DI), Y0
	EXP4
	VMOVUPD Y3, (DI)
	ADDQ $32, DI
	SUBQ $4, CX
	JMP  expLoop
expDone:
	VZEROUPPER
	RET

// func expShiftSumAVX2(dst, src *float32, n int, shift float32, acc *[8]float32)
// dst[i] = expf32(src[i] - shift) for n (a multiple of 8) values and acc[i%8] += dst[i], as
// expShiftSum (constants from the GELU table).
TEXT ·expShiftSumAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y8
	MOVQ acc+32(FP), DX
	VMOVUPS (DX), Y9
	VBROADCASTSS ec<>+0(SB), Y14
	VBROADCASTSS ec<>+4(SB), Y15

essLoop:
	CMPQ CX, $8
	JL   essDone
	VMOVUPS (SI), Y0
	VSUBPS Y8, Y0, Y0
	VCMPPS $0x15, Y15, Y0, Y7
	VMINPS Y0, Y14, Y1
	EXPPOLY8(Y1, Y2, Y4, Y5)
	EXPSCALE8(Y2, Y5, Y6, Y10, Y11)
	VANDPS Y7, Y5, Y5
	VMOVUPS Y5, (DI)
	VADDPS Y5, Y9, Y9
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  essLoop

essDone:
	VMOVUPS Y9, (DX)
	VZEROUPPER
	RET
