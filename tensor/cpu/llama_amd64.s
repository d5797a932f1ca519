//go:build amd64 && !purego

#include "textflag.h"

// The RMSNorm and RoPE kernels (llama_amd64.go; the SwiGLU ones are in swiglu_amd64.s).
// Products and sums round one at a time, in the order of the Go code in llama_kernels.go, so
// the bits agree.

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

// func rope8AVX2(o, x, cos, sin *float32, n, half int)
// For i < n (a multiple of 8), with x0 = x[i], x1 = x[i+half]:
// o[i] = x0·cos[i] − x1·sin[i], o[i+half] = x1·cos[i] + x0·sin[i].
TEXT ·rope8AVX2(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ cos+16(FP), R8
	MOVQ sin+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ half+40(FP), R10
	SHLQ $2, R10

ropeLoop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R10*1), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VSUBPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y6
	VMULPS  Y3, Y0, Y7
	VADDPS  Y7, Y6, Y6
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (DI)(R10*1)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	SUBQ    $8, CX
	JNZ     ropeLoop
	VZEROUPPER
	RET

// func ropeBwd8AVX2(dinp, grad, cos, sin *float32, n, half int)
// For i < n (a multiple of 8), with g0 = grad[i], g1 = grad[i+half]:
// dinp[i] += g0·cos[i] + g1·sin[i], dinp[i+half] += g1·cos[i] − g0·sin[i].
TEXT ·ropeBwd8AVX2(SB), NOSPLIT, $0-48
	MOVQ dinp+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ cos+16(FP), R8
	MOVQ sin+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ half+40(FP), R10
	SHLQ $2, R10

ropebLoop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R10*1), Y1
	VMOVUPS (R8), Y2
	VMOVUPS (R9), Y3
	VMULPS  Y2, Y0, Y4
	VMULPS  Y3, Y1, Y5
	VADDPS  Y5, Y4, Y4
	VMULPS  Y2, Y1, Y6
	VMULPS  Y3, Y0, Y7
	VSUBPS  Y7, Y6, Y6
	VADDPS  (DI), Y4, Y4
	VADDPS  (DI)(R10*1), Y6, Y6
	VMOVUPS Y4, (DI)
	VMOVUPS Y6, (DI)(R10*1)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	SUBQ    $8, CX
	JNZ     ropebLoop
	VZEROUPPER
	RET
