//go:build amd64 && !purego

#include "textflag.h"

// func adamwAVX2(p, grad, m, v *float32, n int, c *[10]float32)
// llm.c's AdamW on n (a multiple of 8) parameters, as adamJob.run: c holds gs, b1, 1-b1, b2,
// 1-b2, c1, c2, eps, wd, lr. Only correctly rounded operations, in the Go code's order.
TEXT ·adamwAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), R8
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // gs
	VBROADCASTSS 4(AX), Y9   // b1
	VBROADCASTSS 8(AX), Y10  // 1-b1
	VBROADCASTSS 12(AX), Y11 // b2
	VBROADCASTSS 16(AX), Y12 // 1-b2
	VBROADCASTSS 20(AX), Y13 // c1
	VBROADCASTSS 24(AX), Y14 // c2
	VBROADCASTSS 28(AX), Y15 // eps

adamLoop:
	CMPQ CX, $8
	JL   adamDone
	VMULPS (SI), Y8, Y0      // grad = g*gs
	VMULPS (DX), Y9, Y1      // b1*m
	VMULPS Y0, Y10, Y2       // (1-b1)*grad
	VADDPS Y2, Y1, Y1        // m
	VMULPS (R8), Y11, Y3     // b2*v
	VMULPS Y0, Y12, Y4       // (1-b2)*grad
	VMULPS Y0, Y4, Y4        // *grad
	VADDPS Y4, Y3, Y3        // v
	VMOVUPS Y1, (DX)
	VMOVUPS Y3, (R8)
	VDIVPS Y13, Y1, Y5       // mhat = m/c1
	VDIVPS Y14, Y3, Y6       // vhat = v/c2
	VSQRTPS Y6, Y6
	VADDPS Y15, Y6, Y6       // sqrt(vhat)+eps
	VDIVPS Y6, Y5, Y5        // mhat/(...)
	VBROADCASTSS 32(AX), Y7  // wd
	VMULPS (DI), Y7, Y7      // wd*param
	VADDPS Y7, Y5, Y5
	VBROADCASTSS 36(AX), Y7  // lr
	VMULPS Y7, Y5, Y5        // lr*(...)
	VMOVUPS (DI), Y6
	VSUBPS Y5, Y6, Y6        // param - lr*(...)
	VMOVUPS Y6, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R8
	SUBQ $8, CX
	JMP  adamLoop

adamDone:
	VZEROUPPER
	RET
