//go:build amd64 && !purego

#include "textflag.h"
#include "exp32_amd64.h"

// The SwiGLU, RMSNorm and RoPE kernels (llama_amd64.go). Products and sums round one at a
// time, in the order of the Go code in llama_kernels.go, so the bits agree.

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

// SIGMOID8 sets S = 1/(1+expf32(-G)) for the eight lanes of G, as sigmoidf: the exponential
// is expShiftSumAVX2's (2^k in two halves, 0 below -104, NaN kept). Needs Y13 = 1, Y14 = 89,
// Y15 = -104; clobbers Y1..Y7 and Y10, Y11.
#define SIGMOID8(G, S) \
	VXORPS gc<>+256(SB), G, Y1; \
	VCMPPS $0x15, Y15, Y1, Y7; \
	VMINPS Y1, Y14, Y1; \
	EXPPOLY8(Y1, Y2, Y4, Y5) \
	VCVTPS2DQ Y2, Y6; \
	VPSRAD $1, Y6, Y10; \
	VPSUBD Y10, Y6, Y11; \
	VPADDD gc<>+768(SB), Y10, Y10; \
	VPSLLD $23, Y10, Y10; \
	VPADDD gc<>+768(SB), Y11, Y11; \
	VPSLLD $23, Y11, Y11; \
	VMULPS Y10, Y5, Y5; \
	VMULPS Y11, Y5, Y5; \
	VANDPS Y7, Y5, Y5; \
	VADDPS Y13, Y5, Y5; \
	VDIVPS Y5, Y13, S;

// func swigluFwd8AVX2(out, gate, up *float32, n int)
// out = (g·sigmoid(g))·up for n (a multiple of 8) values, as swigluRangeGo.
TEXT ·swigluFwd8AVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS gc<>+96(SB), Y13
	VBROADCASTSS ec<>+0(SB), Y14
	VBROADCASTSS ec<>+4(SB), Y15

sf8Loop:
	CMPQ CX, $8
	JL   sf8Done
	VMOVUPS (SI), Y0
	SIGMOID8(Y0, Y8)
	VMULPS Y8, Y0, Y8
	VMULPS (DX), Y8, Y8
	VMOVUPS Y8, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  sf8Loop

sf8Done:
	VZEROUPPER
	RET

// func swigluBwd8AVX2(dgate, dup, gate, up, dout *float32, n int)
// dup += dout·(g·s) and dgate += (dout·up)·(s·(1 + g·(1−s))), s = sigmoid(g), for n (a multiple
// of 8) values, as swigluBackwardRangeGo.
TEXT ·swigluBwd8AVX2(SB), NOSPLIT, $0-48
	MOVQ dgate+0(FP), DI
	MOVQ dup+8(FP), R8
	MOVQ gate+16(FP), SI
	MOVQ up+24(FP), DX
	MOVQ dout+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSS gc<>+96(SB), Y13
	VBROADCASTSS ec<>+0(SB), Y14
	VBROADCASTSS ec<>+4(SB), Y15

sb8Loop:
	CMPQ CX, $8
	JL   sb8Done
	VMOVUPS (SI), Y0
	SIGMOID8(Y0, Y8)
	VMOVUPS (R9), Y9
	VMULPS Y8, Y0, Y1
	VMULPS Y1, Y9, Y1
	VADDPS (R8), Y1, Y1
	VMOVUPS Y1, (R8)
	VSUBPS Y8, Y13, Y2
	VMULPS Y2, Y0, Y2
	VADDPS Y13, Y2, Y2
	VMULPS Y2, Y8, Y2
	VMULPS (DX), Y9, Y3
	VMULPS Y2, Y3, Y3
	VADDPS (DI), Y3, Y3
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  sb8Loop

sb8Done:
	VZEROUPPER
	RET

// SIGMOID16 is SIGMOID8 on sixteen lanes: needs Z13 = 1, Z14 = 89, Z15 = -104; clobbers
// Z1..Z7, Z10, Z11 and K1.
#define SIGMOID16(G, S) \
	VPXORD.BCST gc<>+256(SB), G, Z1; \
	VCMPPS $0x15, Z15, Z1, K1; \
	VMINPS Z1, Z14, Z1; \
	EXPPOLY16(Z1, Z2, Z4, Z5) \
	VCVTPS2DQ Z2, Z6; \
	VPSRAD $1, Z6, Z10; \
	VPSUBD Z10, Z6, Z11; \
	VPADDD.BCST gc<>+768(SB), Z10, Z10; \
	VPSLLD $23, Z10, Z10; \
	VPADDD.BCST gc<>+768(SB), Z11, Z11; \
	VPSLLD $23, Z11, Z11; \
	VMULPS Z10, Z5, Z5; \
	VMULPS Z11, Z5, Z5; \
	VPXORD Z7, Z7, Z7; \
	VMOVAPS Z5, K1, Z7; \
	VADDPS Z13, Z7, Z7; \
	VDIVPS Z7, Z13, S;

// func swigluFwd16AVX512(out, gate, up *float32, n int)
// swigluFwd8AVX2 on sixteen lanes, for n a multiple of 16.
TEXT ·swigluFwd16AVX512(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS gc<>+96(SB), Z13
	VBROADCASTSS ec<>+0(SB), Z14
	VBROADCASTSS ec<>+4(SB), Z15

sf16Loop:
	CMPQ CX, $16
	JL   sf16Done
	VMOVUPS (SI), Z0
	SIGMOID16(Z0, Z8)
	VMULPS Z8, Z0, Z8
	VMULPS (DX), Z8, Z8
	VMOVUPS Z8, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  sf16Loop

sf16Done:
	VZEROUPPER
	RET

// func swigluBwd16AVX512(dgate, dup, gate, up, dout *float32, n int)
// swigluBwd8AVX2 on sixteen lanes, for n a multiple of 16.
TEXT ·swigluBwd16AVX512(SB), NOSPLIT, $0-48
	MOVQ dgate+0(FP), DI
	MOVQ dup+8(FP), R8
	MOVQ gate+16(FP), SI
	MOVQ up+24(FP), DX
	MOVQ dout+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSS gc<>+96(SB), Z13
	VBROADCASTSS ec<>+0(SB), Z14
	VBROADCASTSS ec<>+4(SB), Z15

sb16Loop:
	CMPQ CX, $16
	JL   sb16Done
	VMOVUPS (SI), Z0
	SIGMOID16(Z0, Z8)
	VMOVUPS (R9), Z9
	VMULPS Z8, Z0, Z1
	VMULPS Z1, Z9, Z1
	VADDPS (R8), Z1, Z1
	VMOVUPS Z1, (R8)
	VSUBPS Z8, Z13, Z2
	VMULPS Z2, Z0, Z2
	VADDPS Z13, Z2, Z2
	VMULPS Z2, Z8, Z2
	VMULPS (DX), Z9, Z3
	VMULPS Z2, Z3, Z3
	VADDPS (DI), Z3, Z3
	VMOVUPS Z3, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  sb16Loop

sb16Done:
	VZEROUPPER
	RET
