//go:build amd64 && !purego

#include "textflag.h"

// The LayerNorm and RMSNorm row kernels (norm_amd64.go). Products and sums round one at a
// time, in the order of the Go code in norm.go, so the bits agree.

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

// func rmsSumSquares8AVX2(x *float32, n int, acc *[8]float32)
// acc[i%8] += x[i]² for n (a multiple of 8) values, in order of i.
TEXT ·rmsSumSquares8AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ acc+16(FP), DX
	VMOVUPS (DX), Y0

ssqLoop:
	VMOVUPS (SI), Y1
	VMULPS  Y1, Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     ssqLoop
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET

// func rmsDot3x8AVX2(a, b, c *float32, n int, acc *[8]float32)
// acc[i%8] += (a[i]·b[i])·c[i] for n (a multiple of 8) values, in order of i.
TEXT ·rmsDot3x8AVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), R8
	MOVQ c+16(FP), R9
	MOVQ n+24(FP), CX
	MOVQ acc+32(FP), DX
	VMOVUPS (DX), Y0

dot3Loop:
	VMOVUPS (SI), Y1
	VMULPS  (R8), Y1, Y1
	VMULPS  (R9), Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	SUBQ    $8, CX
	JNZ     dot3Loop
	VMOVUPS Y0, (DX)
	VZEROUPPER
	RET

// func rmsScale8AVX2(out, x, w *float32, n int, s float32)
// out[i] = w[i]·(x[i]·s) for n (a multiple of 8) values.
TEXT ·rmsScale8AVX2(SB), NOSPLIT, $0-36
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), R8
	MOVQ n+24(FP), CX
	VBROADCASTSS s+32(FP), Y0

scaleLoop:
	VMULPS  (SI), Y0, Y1
	VMULPS  (R8), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     scaleLoop
	VZEROUPPER
	RET

// func rmsBwdApply8AVX2(dinp, dout, x, w *float32, n int, s, k float32)
// dinp[i] += (s·w[i])·dout[i] − x[i]·k for n (a multiple of 8) values.
TEXT ·rmsBwdApply8AVX2(SB), NOSPLIT, $0-48
	MOVQ dinp+0(FP), DI
	MOVQ dout+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS s+40(FP), Y0
	VBROADCASTSS k+44(FP), Y1

applyLoop:
	VMULPS  (R8), Y0, Y2
	VMULPS  (DX), Y2, Y2
	VMULPS  (SI), Y1, Y3
	VSUBPS  Y3, Y2, Y2
	VADDPS  (DI), Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, DI
	ADDQ    $32, DX
	ADDQ    $32, SI
	ADDQ    $32, R8
	SUBQ    $8, CX
	JNZ     applyLoop
	VZEROUPPER
	RET

// RMSWCOL8 adds eight columns of one row, at byte offset OFF, into ACC: d·(x·s), s in Y8.
#define RMSWCOL8(OFF, ACC) \
	VMULPS OFF(SI), Y8, Y9; \
	VMULPS OFF(DX), Y9, Y9; \
	VADDPS Y9, ACC, ACC;

// func rmsWeightCol32AVX2(dw, d, x, rstd *float32, rows, stride int)
// For 32 columns: dw += d·(x·rstd[r]) over rows r (> 0) in order, rows stride floats apart.
TEXT ·rmsWeightCol32AVX2(SB), NOSPLIT, $0-48
	MOVQ dw+0(FP), DI
	MOVQ d+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ rstd+24(FP), R9
	MOVQ rows+32(FP), CX
	MOVQ stride+40(FP), R11
	SHLQ $2, R11
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3

rmswLoop:
	VBROADCASTSS (R9), Y8
	RMSWCOL8(0, Y0)
	RMSWCOL8(32, Y1)
	RMSWCOL8(64, Y2)
	RMSWCOL8(96, Y3)
	ADDQ R11, SI
	ADDQ R11, DX
	ADDQ $4, R9
	DECQ CX
	JNZ  rmswLoop
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET
