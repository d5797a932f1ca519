//go:build amd64 && !purego

#include "textflag.h"
#include "exp64_amd64.h"

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

// func divScaleAVX2(x *float32, n int, s, a float32)
// x[i] = (x[i] / s) * a for n (a multiple of 8) values, each IEEE operation rounded in turn:
// the bits of a division pass followed by a scaling pass.
TEXT ·divScaleAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y1
	VBROADCASTSS a+20(FP), Y2

divScaleLoop:
	CMPQ CX, $8
	JL   divScaleDone
	VMOVUPS (DI), Y0
	VDIVPS Y1, Y0, Y0
	VMULPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  divScaleLoop

divScaleDone:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
// The largest of n (a multiple of 32) values, skipping NaN: each lane keeps its running
// maximum m as VMAXPS's second source, which it returns when x is NaN or x <= m, as maxf32's
// x > m test does.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0xff800000, AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	VMOVAPS Y0, Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y0, Y3

maxLoop:
	CMPQ CX, $32
	JL   maxDone
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VMAXPS Y0, Y4, Y0
	VMAXPS Y1, Y5, Y1
	VMAXPS Y2, Y6, Y2
	VMAXPS Y3, Y7, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	JMP  maxLoop

maxDone:
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VPSHUFD $1, X0, X1
	VMAXSS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET
