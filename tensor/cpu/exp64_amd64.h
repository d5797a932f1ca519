// The float64 exponential of fastmath_amd64.s (expAVX2) and crossentropy_amd64.s (the
// log-softmax kernels): its constant table and the EXP4 sequence. Include after textflag.h.
// The table is file-local, so each file that includes it holds its own copy.

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
