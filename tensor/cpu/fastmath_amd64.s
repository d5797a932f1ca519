//go:build amd64 && !purego

#include "textflag.h"

// Four-lane float64 constants for the exponential.
DATA consts<>+0(SB)/8, $0x3ff71547652b82fe
DATA consts<>+8(SB)/8, $0x3ff71547652b82fe
DATA consts<>+16(SB)/8, $0x3ff71547652b82fe
DATA consts<>+24(SB)/8, $0x3ff71547652b82fe
DATA consts<>+32(SB)/8, $0x3fe62e42fee00000
DATA consts<>+40(SB)/8, $0x3fe62e42fee00000
DATA consts<>+48(SB)/8, $0x3fe62e42fee00000
DATA consts<>+56(SB)/8, $0x3fe62e42fee00000
DATA consts<>+64(SB)/8, $0x3dea39ef35793c76
DATA consts<>+72(SB)/8, $0x3dea39ef35793c76
DATA consts<>+80(SB)/8, $0x3dea39ef35793c76
DATA consts<>+88(SB)/8, $0x3dea39ef35793c76
DATA consts<>+96(SB)/8, $0xc086200000000000
DATA consts<>+104(SB)/8, $0xc086200000000000
DATA consts<>+112(SB)/8, $0xc086200000000000
DATA consts<>+120(SB)/8, $0xc086200000000000
DATA consts<>+128(SB)/8, $0x4086280000000000
DATA consts<>+136(SB)/8, $0x4086280000000000
DATA consts<>+144(SB)/8, $0x4086280000000000
DATA consts<>+152(SB)/8, $0x4086280000000000
DATA consts<>+160(SB)/8, $0x3e5ae64567f544e4
DATA consts<>+168(SB)/8, $0x3e5ae64567f544e4
DATA consts<>+176(SB)/8, $0x3e5ae64567f544e4
DATA consts<>+184(SB)/8, $0x3e5ae64567f544e4
DATA consts<>+192(SB)/8, $0x3e927e4fb7789f5c
DATA consts<>+200(SB)/8, $0x3e927e4fb7789f5c
DATA consts<>+208(SB)/8, $0x3e927e4fb7789f5c
DATA consts<>+216(SB)/8, $0x3e927e4fb7789f5c
DATA consts<>+224(SB)/8, $0x3ec71de3a556c734
DATA consts<>+232(SB)/8, $0x3ec71de3a556c734
DATA consts<>+240(SB)/8, $0x3ec71de3a556c734
DATA consts<>+248(SB)/8, $0x3ec71de3a556c734
DATA consts<>+256(SB)/8, $0x3efa01a01a01a01a
DATA consts<>+264(SB)/8, $0x3efa01a01a01a01a
DATA consts<>+272(SB)/8, $0x3efa01a01a01a01a
DATA consts<>+280(SB)/8, $0x3efa01a01a01a01a
DATA consts<>+288(SB)/8, $0x3f2a01a01a01a01a
DATA consts<>+296(SB)/8, $0x3f2a01a01a01a01a
DATA consts<>+304(SB)/8, $0x3f2a01a01a01a01a
DATA consts<>+312(SB)/8, $0x3f2a01a01a01a01a
DATA consts<>+320(SB)/8, $0x3f56c16c16c16c17
DATA consts<>+328(SB)/8, $0x3f56c16c16c16c17
DATA consts<>+336(SB)/8, $0x3f56c16c16c16c17
DATA consts<>+344(SB)/8, $0x3f56c16c16c16c17
DATA consts<>+352(SB)/8, $0x3f81111111111111
DATA consts<>+360(SB)/8, $0x3f81111111111111
DATA consts<>+368(SB)/8, $0x3f81111111111111
DATA consts<>+376(SB)/8, $0x3f81111111111111
DATA consts<>+384(SB)/8, $0x3fa5555555555555
DATA consts<>+392(SB)/8, $0x3fa5555555555555
DATA consts<>+400(SB)/8, $0x3fa5555555555555
DATA consts<>+408(SB)/8, $0x3fa5555555555555
DATA consts<>+416(SB)/8, $0x3fc5555555555555
DATA consts<>+424(SB)/8, $0x3fc5555555555555
DATA consts<>+432(SB)/8, $0x3fc5555555555555
DATA consts<>+440(SB)/8, $0x3fc5555555555555
DATA consts<>+448(SB)/8, $0x3fe0000000000000
DATA consts<>+456(SB)/8, $0x3fe0000000000000
DATA consts<>+464(SB)/8, $0x3fe0000000000000
DATA consts<>+472(SB)/8, $0x3fe0000000000000
DATA consts<>+480(SB)/8, $0x3ff0000000000000
DATA consts<>+488(SB)/8, $0x3ff0000000000000
DATA consts<>+496(SB)/8, $0x3ff0000000000000
DATA consts<>+504(SB)/8, $0x3ff0000000000000
DATA consts<>+512(SB)/8, $0x3ff0000000000000
DATA consts<>+520(SB)/8, $0x3ff0000000000000
DATA consts<>+528(SB)/8, $0x3ff0000000000000
DATA consts<>+536(SB)/8, $0x3ff0000000000000
GLOBL consts<>(SB), RODATA|NOPTR, $544

// EXP4 sets Y3 = e^Y0 (four float64): 2^k e^r with k = round(x log2e), |r| <= ln2/2 and e^r
// by its Taylor series to r^11 (relative error below 1e-14). Arguments are clamped to
// [-708, 709]; NaN stays NaN. Needs Y10..Y14 = log2e, ln2hi, ln2lo, -708, 709; clobbers Y1, Y2,
// Y4, Y5. Every kernel uses this one sequence, so they agree bit for bit.
#define EXP4 \
	VMAXPD Y0, Y13, Y1; \
	VMINPD Y1, Y14, Y1; \
	VMULPD Y10, Y1, Y2; \
	VROUNDPD $0, Y2, Y2; \
	VFNMADD231PD Y11, Y2, Y1; \
	VFNMADD231PD Y12, Y2, Y1; \
	VMOVUPD consts<>+160(SB), Y3; \
	VFMADD213PD consts<>+192(SB), Y1, Y3; \
	VFMADD213PD consts<>+224(SB), Y1, Y3; \
	VFMADD213PD consts<>+256(SB), Y1, Y3; \
	VFMADD213PD consts<>+288(SB), Y1, Y3; \
	VFMADD213PD consts<>+320(SB), Y1, Y3; \
	VFMADD213PD consts<>+352(SB), Y1, Y3; \
	VFMADD213PD consts<>+384(SB), Y1, Y3; \
	VFMADD213PD consts<>+416(SB), Y1, Y3; \
	VFMADD213PD consts<>+448(SB), Y1, Y3; \
	VFMADD213PD consts<>+480(SB), Y1, Y3; \
	VFMADD213PD consts<>+512(SB), Y1, Y3; \
	VCVTPD2DQY Y2, X4; \
	VPMOVSXDQ X4, Y4; \
	VPSLLQ $52, Y4, Y4; \
	VPADDQ Y4, Y3, Y3; \
	VCMPPD $3, Y0, Y0, Y5; \
	VBLENDVPD Y5, Y0, Y3, Y3;

#define EXPCONSTS \
	VMOVUPD consts<>+0(SB), Y10; \
	VMOVUPD consts<>+32(SB), Y11; \
	VMOVUPD consts<>+64(SB), Y12; \
	VMOVUPD consts<>+96(SB), Y13; \
	VMOVUPD consts<>+128(SB), Y14;

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

// func divAVX2(x *float32, n int, s float32)
// x[i] /= s for n (a multiple of 8) values; IEEE division, so the same bits as scalar code.
TEXT ·divAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y1

divLoop:
	CMPQ CX, $8
	JL   divDone
	VMOVUPS (DI), Y0
	VDIVPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  divLoop

divDone:
	VZEROUPPER
	RET

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

// func lsgStatsAVX2(l *float32, e *float64, n int, invT, zmax float64, sums *[8]float64)
// For n (a multiple of 4) logits: zs = l*invT - zmax, e = exp(zs) (EXP4), and per lane j
// (elements i = j mod 4, in order) sums[j] += e and sums[4+j] += e*zs, as lsgRow's loop.
TEXT ·lsgStatsAVX2(SB), NOSPLIT, $0-48
	MOVQ l+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD invT+24(FP), Y6
	VBROADCASTSD zmax+32(FP), Y7
	MOVQ sums+40(FP), AX
	VMOVUPD (AX), Y8
	VMOVUPD 32(AX), Y9
	EXPCONSTS

lsLoop:
	CMPQ CX, $4
	JL   lsDone
	VCVTPS2PD (SI), Y0
	VMULPD Y6, Y0, Y0
	VSUBPD Y7, Y0, Y0 // zs
	EXP4
	VMOVUPD Y3, (DI)
	VADDPD Y3, Y8, Y8
	VMULPD Y0, Y3, Y3
	VADDPD Y3, Y9, Y9
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JMP  lsLoop

lsDone:
	VMOVUPD Y8, (AX)
	VMOVUPD Y9, 32(AX)
	VZEROUPPER
	RET

// func lsgGradAVX2(d *float32, l *float32, e *float64, n int, c *[7]float64)
// For n (a multiple of 4) columns other than the target, as LogSoftmaxGatherBackward's loop:
// lp = (l*invT - zmax) - logZ, p = e*invS, g = (-dlp)*p - (de*p)*(lp+H), d += float32(g*invT).
// c holds invT, zmax, logZ, invS, -dlp, de, H.
TEXT ·lsgGradAVX2(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ l+8(FP), SI
	MOVQ e+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), AX
	VBROADCASTSD 0(AX), Y6  // invT
	VBROADCASTSD 8(AX), Y7  // zmax
	VBROADCASTSD 16(AX), Y8 // logZ
	VBROADCASTSD 24(AX), Y9 // invS
	VBROADCASTSD 32(AX), Y10 // -dlp
	VBROADCASTSD 40(AX), Y11 // de
	VBROADCASTSD 48(AX), Y12 // H

lgLoop:
	CMPQ CX, $4
	JL   lgDone
	VCVTPS2PD (SI), Y0
	VMULPD Y6, Y0, Y0
	VSUBPD Y7, Y0, Y0
	VSUBPD Y8, Y0, Y0       // lp
	VMULPD (DX), Y9, Y1     // p = e*invS
	VMULPD Y1, Y10, Y2      // (-dlp)*p
	VMULPD Y1, Y11, Y3      // de*p
	VADDPD Y12, Y0, Y4      // lp+H
	VMULPD Y4, Y3, Y3
	VSUBPD Y3, Y2, Y2       // g
	VMULPD Y6, Y2, Y2       // g*invT
	VCVTPD2PSY Y2, X2
	VADDPS (DI), X2, X2
	VMOVUPS X2, (DI)
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $32, DX
	SUBQ $4, CX
	JMP  lgLoop

lgDone:
	VZEROUPPER
	RET
