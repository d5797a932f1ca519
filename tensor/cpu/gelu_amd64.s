//go:build amd64 && !purego

#include "textflag.h"
#include "exp32_amd64.h"

// GELUTANH8 sets, for the eight x in Y0, Y1 = u = geluU(x), Y9 = tanh(u) and Y10 = sech²(u),
// as tanhSech2 does, operation for operation (no fused multiply-adds). Clobbers Y2..Y8, Y11..Y13.
#define GELUTANH8 \
	VMULPS gc<>+0(SB), Y0, Y1; \
	VMULPS Y0, Y1, Y1; \
	VMULPS Y0, Y1, Y1; \
	VADDPS Y1, Y0, Y1; \
	VMULPS gc<>+32(SB), Y1, Y1; \
	VANDPS gc<>+224(SB), Y1, Y2; \
	VMINPS gc<>+288(SB), Y2, Y2; \
	VADDPS Y2, Y2, Y3; \
	EXPPOLY8(Y3, Y4, Y5, Y6) \
	VCVTPS2DQ Y4, Y7; \
	VPADDD gc<>+768(SB), Y7, Y7; \
	VPSLLD $23, Y7, Y7; \
	VMULPS Y7, Y6, Y3; \
	VADDPS gc<>+96(SB), Y3, Y8; \
	VMOVUPS gc<>+96(SB), Y7; \
	VDIVPS Y8, Y7, Y8; \
	VMULPS gc<>+128(SB), Y8, Y9; \
	VSUBPS Y9, Y7, Y9; \
	VMULPS gc<>+160(SB), Y3, Y10; \
	VMULPS Y8, Y10, Y10; \
	VMULPS Y8, Y10, Y10; \
	VMULPS Y2, Y2, Y11; \
	VMULPS gc<>+832(SB), Y11, Y12; \
	VADDPS gc<>+800(SB), Y12, Y12; \
	VMULPS Y11, Y12, Y12; \
	VADDPS gc<>+416(SB), Y12, Y12; \
	VMULPS Y11, Y12, Y12; \
	VADDPS gc<>+384(SB), Y12, Y12; \
	VMULPS Y11, Y12, Y12; \
	VADDPS gc<>+352(SB), Y12, Y12; \
	VMULPS Y11, Y12, Y12; \
	VMULPS Y2, Y12, Y12; \
	VADDPS Y2, Y12, Y12; \
	VCMPPS $1, gc<>+320(SB), Y2, Y13; \
	VBLENDVPS Y13, Y12, Y9, Y9; \
	VANDPS gc<>+256(SB), Y1, Y13; \
	VORPS Y13, Y9, Y9;

// GELUTANH16 is GELUTANH8 on sixteen lanes (AVX-512), with the constants broadcast from the
// table; it also clobbers K1.
#define GELUTANH16 \
	VMULPS.BCST gc<>+0(SB), Z0, Z1; \
	VMULPS Z0, Z1, Z1; \
	VMULPS Z0, Z1, Z1; \
	VADDPS Z1, Z0, Z1; \
	VMULPS.BCST gc<>+32(SB), Z1, Z1; \
	VPANDD.BCST gc<>+224(SB), Z1, Z2; \
	VMINPS.BCST gc<>+288(SB), Z2, Z2; \
	VADDPS Z2, Z2, Z3; \
	EXPPOLY16(Z3, Z4, Z5, Z6) \
	VCVTPS2DQ Z4, Z7; \
	VPADDD.BCST gc<>+768(SB), Z7, Z7; \
	VPSLLD $23, Z7, Z7; \
	VMULPS Z7, Z6, Z3; \
	VADDPS.BCST gc<>+96(SB), Z3, Z8; \
	VBROADCASTSS gc<>+96(SB), Z7; \
	VDIVPS Z8, Z7, Z8; \
	VMULPS.BCST gc<>+128(SB), Z8, Z9; \
	VSUBPS Z9, Z7, Z9; \
	VMULPS.BCST gc<>+160(SB), Z3, Z10; \
	VMULPS Z8, Z10, Z10; \
	VMULPS Z8, Z10, Z10; \
	VMULPS Z2, Z2, Z11; \
	VMULPS.BCST gc<>+832(SB), Z11, Z12; \
	VADDPS.BCST gc<>+800(SB), Z12, Z12; \
	VMULPS Z11, Z12, Z12; \
	VADDPS.BCST gc<>+416(SB), Z12, Z12; \
	VMULPS Z11, Z12, Z12; \
	VADDPS.BCST gc<>+384(SB), Z12, Z12; \
	VMULPS Z11, Z12, Z12; \
	VADDPS.BCST gc<>+352(SB), Z12, Z12; \
	VMULPS Z11, Z12, Z12; \
	VMULPS Z2, Z12, Z12; \
	VADDPS Z2, Z12, Z12; \
	VCMPPS.BCST $1, gc<>+320(SB), Z2, K1; \
	VMOVAPS Z12, K1, Z9; \
	VPANDD.BCST gc<>+256(SB), Z1, Z13; \
	VPORD Z13, Z9, Z9;

// func geluFwd8AVX2(out, x *float32, n int)
// out = 0.5x(1 + tanh(u)) for n (a multiple of 8) values, as geluForwardGo.
TEXT ·geluFwd8AVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

gf8Loop:
	CMPQ CX, $8
	JL   gf8Done
	VMOVUPS (SI), Y0
	GELUTANH8
	VMULPS gc<>+64(SB), Y0, Y7
	VADDPS gc<>+96(SB), Y9, Y9
	VMULPS Y9, Y7, Y7
	VMOVUPS Y7, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  gf8Loop

gf8Done:
	VZEROUPPER
	RET

// func geluBwd8AVX2(dinp, x, dout *float32, n int)
// dinp += gelu'(x) dout for n (a multiple of 8) values, as geluBackwardGo.
TEXT ·geluBwd8AVX2(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dout+16(FP), DX
	MOVQ n+24(FP), CX

gb8Loop:
	CMPQ CX, $8
	JL   gb8Done
	VMOVUPS (SI), Y0
	GELUTANH8
	VMULPS gc<>+64(SB), Y0, Y11
	VMULPS Y10, Y11, Y11
	VMULPS gc<>+32(SB), Y11, Y11
	VMULPS gc<>+192(SB), Y0, Y12
	VMULPS Y0, Y12, Y12
	VADDPS gc<>+96(SB), Y12, Y12
	VMULPS Y12, Y11, Y11
	VADDPS gc<>+96(SB), Y9, Y9
	VMULPS gc<>+64(SB), Y9, Y9
	VADDPS Y11, Y9, Y9
	VMULPS (DX), Y9, Y9
	VADDPS (DI), Y9, Y9
	VMOVUPS Y9, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  gb8Loop

gb8Done:
	VZEROUPPER
	RET

// func geluFwd16AVX512(out, x *float32, n int)
// geluFwd8AVX2 on sixteen lanes, for n a multiple of 16.
TEXT ·geluFwd16AVX512(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

gf16Loop:
	CMPQ CX, $16
	JL   gf16Done
	VMOVUPS (SI), Z0
	GELUTANH16
	VMULPS.BCST gc<>+64(SB), Z0, Z7
	VADDPS.BCST gc<>+96(SB), Z9, Z9
	VMULPS Z9, Z7, Z7
	VMOVUPS Z7, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  gf16Loop

gf16Done:
	VZEROUPPER
	RET

// func geluBwd16AVX512(dinp, x, dout *float32, n int)
// geluBwd8AVX2 on sixteen lanes, for n a multiple of 16.
TEXT ·geluBwd16AVX512(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dout+16(FP), DX
	MOVQ n+24(FP), CX

gb16Loop:
	CMPQ CX, $16
	JL   gb16Done
	VMOVUPS (SI), Z0
	GELUTANH16
	VMULPS.BCST gc<>+64(SB), Z0, Z11
	VMULPS Z10, Z11, Z11
	VMULPS.BCST gc<>+32(SB), Z11, Z11
	VMULPS.BCST gc<>+192(SB), Z0, Z12
	VMULPS Z0, Z12, Z12
	VADDPS.BCST gc<>+96(SB), Z12, Z12
	VMULPS Z12, Z11, Z11
	VADDPS.BCST gc<>+96(SB), Z9, Z9
	VMULPS.BCST gc<>+64(SB), Z9, Z9
	VADDPS Z11, Z9, Z9
	VMULPS (DX), Z9, Z9
	VADDPS (DI), Z9, Z9
	VMOVUPS Z9, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $16, CX
	JMP  gb16Loop

gb16Done:
	VZEROUPPER
	RET
