//go:build amd64 && !purego

#include "textflag.h"

// Constants, each repeated in four lanes: log2e, ln2 (hi, lo), the clamp range, then the
// Taylor coefficients 1/11! .. 1/0!.
DATA expConsts<>+0(SB)/8, $0x3ff71547652b82fe
DATA expConsts<>+8(SB)/8, $0x3ff71547652b82fe
DATA expConsts<>+16(SB)/8, $0x3ff71547652b82fe
DATA expConsts<>+24(SB)/8, $0x3ff71547652b82fe
DATA expConsts<>+32(SB)/8, $0x3fe62e42fee00000
DATA expConsts<>+40(SB)/8, $0x3fe62e42fee00000
DATA expConsts<>+48(SB)/8, $0x3fe62e42fee00000
DATA expConsts<>+56(SB)/8, $0x3fe62e42fee00000
DATA expConsts<>+64(SB)/8, $0x3dea39ef35793c76
DATA expConsts<>+72(SB)/8, $0x3dea39ef35793c76
DATA expConsts<>+80(SB)/8, $0x3dea39ef35793c76
DATA expConsts<>+88(SB)/8, $0x3dea39ef35793c76
DATA expConsts<>+96(SB)/8, $0xc086200000000000
DATA expConsts<>+104(SB)/8, $0xc086200000000000
DATA expConsts<>+112(SB)/8, $0xc086200000000000
DATA expConsts<>+120(SB)/8, $0xc086200000000000
DATA expConsts<>+128(SB)/8, $0x4086280000000000
DATA expConsts<>+136(SB)/8, $0x4086280000000000
DATA expConsts<>+144(SB)/8, $0x4086280000000000
DATA expConsts<>+152(SB)/8, $0x4086280000000000
DATA expConsts<>+160(SB)/8, $0x3e5ae64567f544e4
DATA expConsts<>+168(SB)/8, $0x3e5ae64567f544e4
DATA expConsts<>+176(SB)/8, $0x3e5ae64567f544e4
DATA expConsts<>+184(SB)/8, $0x3e5ae64567f544e4
DATA expConsts<>+192(SB)/8, $0x3e927e4fb7789f5c
DATA expConsts<>+200(SB)/8, $0x3e927e4fb7789f5c
DATA expConsts<>+208(SB)/8, $0x3e927e4fb7789f5c
DATA expConsts<>+216(SB)/8, $0x3e927e4fb7789f5c
DATA expConsts<>+224(SB)/8, $0x3ec71de3a556c734
DATA expConsts<>+232(SB)/8, $0x3ec71de3a556c734
DATA expConsts<>+240(SB)/8, $0x3ec71de3a556c734
DATA expConsts<>+248(SB)/8, $0x3ec71de3a556c734
DATA expConsts<>+256(SB)/8, $0x3efa01a01a01a01a
DATA expConsts<>+264(SB)/8, $0x3efa01a01a01a01a
DATA expConsts<>+272(SB)/8, $0x3efa01a01a01a01a
DATA expConsts<>+280(SB)/8, $0x3efa01a01a01a01a
DATA expConsts<>+288(SB)/8, $0x3f2a01a01a01a01a
DATA expConsts<>+296(SB)/8, $0x3f2a01a01a01a01a
DATA expConsts<>+304(SB)/8, $0x3f2a01a01a01a01a
DATA expConsts<>+312(SB)/8, $0x3f2a01a01a01a01a
DATA expConsts<>+320(SB)/8, $0x3f56c16c16c16c17
DATA expConsts<>+328(SB)/8, $0x3f56c16c16c16c17
DATA expConsts<>+336(SB)/8, $0x3f56c16c16c16c17
DATA expConsts<>+344(SB)/8, $0x3f56c16c16c16c17
DATA expConsts<>+352(SB)/8, $0x3f81111111111111
DATA expConsts<>+360(SB)/8, $0x3f81111111111111
DATA expConsts<>+368(SB)/8, $0x3f81111111111111
DATA expConsts<>+376(SB)/8, $0x3f81111111111111
DATA expConsts<>+384(SB)/8, $0x3fa5555555555555
DATA expConsts<>+392(SB)/8, $0x3fa5555555555555
DATA expConsts<>+400(SB)/8, $0x3fa5555555555555
DATA expConsts<>+408(SB)/8, $0x3fa5555555555555
DATA expConsts<>+416(SB)/8, $0x3fc5555555555555
DATA expConsts<>+424(SB)/8, $0x3fc5555555555555
DATA expConsts<>+432(SB)/8, $0x3fc5555555555555
DATA expConsts<>+440(SB)/8, $0x3fc5555555555555
DATA expConsts<>+448(SB)/8, $0x3fe0000000000000
DATA expConsts<>+456(SB)/8, $0x3fe0000000000000
DATA expConsts<>+464(SB)/8, $0x3fe0000000000000
DATA expConsts<>+472(SB)/8, $0x3fe0000000000000
DATA expConsts<>+480(SB)/8, $0x3ff0000000000000
DATA expConsts<>+488(SB)/8, $0x3ff0000000000000
DATA expConsts<>+496(SB)/8, $0x3ff0000000000000
DATA expConsts<>+504(SB)/8, $0x3ff0000000000000
DATA expConsts<>+512(SB)/8, $0x3ff0000000000000
DATA expConsts<>+520(SB)/8, $0x3ff0000000000000
DATA expConsts<>+528(SB)/8, $0x3ff0000000000000
DATA expConsts<>+536(SB)/8, $0x3ff0000000000000
GLOBL expConsts<>(SB), RODATA|NOPTR, $544


// func expAVX2(x *float64, n int)
// x[i] = e^x[i] for n (a multiple of 4) values: 2^k e^r with k = round(x log2e) and
// |r| <= ln2/2, e^r by its Taylor series to r^11 (relative error below 1e-14). NaN stays NaN;
// arguments are clamped to [-708, 709], so the result is never subnormal or infinite.
TEXT ·expAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VMOVUPD expConsts<>+0(SB), Y10
	VMOVUPD expConsts<>+32(SB), Y11
	VMOVUPD expConsts<>+64(SB), Y12
	VMOVUPD expConsts<>+96(SB), Y13
	VMOVUPD expConsts<>+128(SB), Y14
loop:
	CMPQ CX, $4
	JL done
	VMOVUPD (DI), Y0
	VMAXPD Y0, Y13, Y1          // max(lo, x); NaN x passes through
	VMINPD Y1, Y14, Y1          // min(hi, .)
	VMULPD Y10, Y1, Y2
	VROUNDPD $0, Y2, Y2         // k, to nearest
	VFNMADD231PD Y11, Y2, Y1    // r = x - k ln2hi
	VFNMADD231PD Y12, Y2, Y1    // r -= k ln2lo
	VMOVUPD expConsts<>+160(SB), Y3
	VFMADD213PD expConsts<>+192(SB), Y1, Y3
	VFMADD213PD expConsts<>+224(SB), Y1, Y3
	VFMADD213PD expConsts<>+256(SB), Y1, Y3
	VFMADD213PD expConsts<>+288(SB), Y1, Y3
	VFMADD213PD expConsts<>+320(SB), Y1, Y3
	VFMADD213PD expConsts<>+352(SB), Y1, Y3
	VFMADD213PD expConsts<>+384(SB), Y1, Y3
	VFMADD213PD expConsts<>+416(SB), Y1, Y3
	VFMADD213PD expConsts<>+448(SB), Y1, Y3
	VFMADD213PD expConsts<>+480(SB), Y1, Y3
	VFMADD213PD expConsts<>+512(SB), Y1, Y3
	VCVTPD2DQY Y2, X4
	VPMOVSXDQ X4, Y4
	VPSLLQ $52, Y4, Y4
	VPADDQ Y4, Y3, Y3           // scale by 2^k in the exponent field
	VCMPPD $3, Y0, Y0, Y5       // unordered: x is NaN
	VBLENDVPD Y5, Y0, Y3, Y3
	VMOVUPD Y3, (DI)
	ADDQ $32, DI
	SUBQ $4, CX
	JMP loop
done:
	VZEROUPPER
	RET
