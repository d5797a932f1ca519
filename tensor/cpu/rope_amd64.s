//go:build amd64 && !purego

#include "textflag.h"

// The RoPE kernels (rope_amd64.go). Products and sums round one at a time, in the order of
// the Go code in rope.go, so the bits agree.

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
