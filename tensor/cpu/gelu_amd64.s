//go:build amd64 && !purego

#include "textflag.h"

// Eight-lane float32 constants for the GELU kernels (gelu.go names them).
DATA gc<>+0(SB)/4, $0x3d372713 // cubic
DATA gc<>+4(SB)/4, $0x3d372713
DATA gc<>+8(SB)/4, $0x3d372713
DATA gc<>+12(SB)/4, $0x3d372713
DATA gc<>+16(SB)/4, $0x3d372713
DATA gc<>+20(SB)/4, $0x3d372713
DATA gc<>+24(SB)/4, $0x3d372713
DATA gc<>+28(SB)/4, $0x3d372713
DATA gc<>+32(SB)/4, $0x3f4c4229 // scale
DATA gc<>+36(SB)/4, $0x3f4c4229
DATA gc<>+40(SB)/4, $0x3f4c4229
DATA gc<>+44(SB)/4, $0x3f4c4229
DATA gc<>+48(SB)/4, $0x3f4c4229
DATA gc<>+52(SB)/4, $0x3f4c4229
DATA gc<>+56(SB)/4, $0x3f4c4229
DATA gc<>+60(SB)/4, $0x3f4c4229
DATA gc<>+64(SB)/4, $0x3f000000 // half
DATA gc<>+68(SB)/4, $0x3f000000
DATA gc<>+72(SB)/4, $0x3f000000
DATA gc<>+76(SB)/4, $0x3f000000
DATA gc<>+80(SB)/4, $0x3f000000
DATA gc<>+84(SB)/4, $0x3f000000
DATA gc<>+88(SB)/4, $0x3f000000
DATA gc<>+92(SB)/4, $0x3f000000
DATA gc<>+96(SB)/4, $0x3f800000 // one
DATA gc<>+100(SB)/4, $0x3f800000
DATA gc<>+104(SB)/4, $0x3f800000
DATA gc<>+108(SB)/4, $0x3f800000
DATA gc<>+112(SB)/4, $0x3f800000
DATA gc<>+116(SB)/4, $0x3f800000
DATA gc<>+120(SB)/4, $0x3f800000
DATA gc<>+124(SB)/4, $0x3f800000
DATA gc<>+128(SB)/4, $0x40000000 // two
DATA gc<>+132(SB)/4, $0x40000000
DATA gc<>+136(SB)/4, $0x40000000
DATA gc<>+140(SB)/4, $0x40000000
DATA gc<>+144(SB)/4, $0x40000000
DATA gc<>+148(SB)/4, $0x40000000
DATA gc<>+152(SB)/4, $0x40000000
DATA gc<>+156(SB)/4, $0x40000000
DATA gc<>+160(SB)/4, $0x40800000 // four
DATA gc<>+164(SB)/4, $0x40800000
DATA gc<>+168(SB)/4, $0x40800000
DATA gc<>+172(SB)/4, $0x40800000
DATA gc<>+176(SB)/4, $0x40800000
DATA gc<>+180(SB)/4, $0x40800000
DATA gc<>+184(SB)/4, $0x40800000
DATA gc<>+188(SB)/4, $0x40800000
DATA gc<>+192(SB)/4, $0x3e095d4f // cubic3
DATA gc<>+196(SB)/4, $0x3e095d4f
DATA gc<>+200(SB)/4, $0x3e095d4f
DATA gc<>+204(SB)/4, $0x3e095d4f
DATA gc<>+208(SB)/4, $0x3e095d4f
DATA gc<>+212(SB)/4, $0x3e095d4f
DATA gc<>+216(SB)/4, $0x3e095d4f
DATA gc<>+220(SB)/4, $0x3e095d4f
DATA gc<>+224(SB)/4, $0x7fffffff // absmask
DATA gc<>+228(SB)/4, $0x7fffffff
DATA gc<>+232(SB)/4, $0x7fffffff
DATA gc<>+236(SB)/4, $0x7fffffff
DATA gc<>+240(SB)/4, $0x7fffffff
DATA gc<>+244(SB)/4, $0x7fffffff
DATA gc<>+248(SB)/4, $0x7fffffff
DATA gc<>+252(SB)/4, $0x7fffffff
DATA gc<>+256(SB)/4, $0x80000000 // signmask
DATA gc<>+260(SB)/4, $0x80000000
DATA gc<>+264(SB)/4, $0x80000000
DATA gc<>+268(SB)/4, $0x80000000
DATA gc<>+272(SB)/4, $0x80000000
DATA gc<>+276(SB)/4, $0x80000000
DATA gc<>+280(SB)/4, $0x80000000
DATA gc<>+284(SB)/4, $0x80000000
DATA gc<>+288(SB)/4, $0x41700000 // clamp
DATA gc<>+292(SB)/4, $0x41700000
DATA gc<>+296(SB)/4, $0x41700000
DATA gc<>+300(SB)/4, $0x41700000
DATA gc<>+304(SB)/4, $0x41700000
DATA gc<>+308(SB)/4, $0x41700000
DATA gc<>+312(SB)/4, $0x41700000
DATA gc<>+316(SB)/4, $0x41700000
DATA gc<>+320(SB)/4, $0x3e800000 // seriesmax (0.25)
DATA gc<>+324(SB)/4, $0x3e800000
DATA gc<>+328(SB)/4, $0x3e800000
DATA gc<>+332(SB)/4, $0x3e800000
DATA gc<>+336(SB)/4, $0x3e800000
DATA gc<>+340(SB)/4, $0x3e800000
DATA gc<>+344(SB)/4, $0x3e800000
DATA gc<>+348(SB)/4, $0x3e800000
DATA gc<>+352(SB)/4, $0xbeaaaaab // c3
DATA gc<>+356(SB)/4, $0xbeaaaaab
DATA gc<>+360(SB)/4, $0xbeaaaaab
DATA gc<>+364(SB)/4, $0xbeaaaaab
DATA gc<>+368(SB)/4, $0xbeaaaaab
DATA gc<>+372(SB)/4, $0xbeaaaaab
DATA gc<>+376(SB)/4, $0xbeaaaaab
DATA gc<>+380(SB)/4, $0xbeaaaaab
DATA gc<>+384(SB)/4, $0x3e088889 // c5
DATA gc<>+388(SB)/4, $0x3e088889
DATA gc<>+392(SB)/4, $0x3e088889
DATA gc<>+396(SB)/4, $0x3e088889
DATA gc<>+400(SB)/4, $0x3e088889
DATA gc<>+404(SB)/4, $0x3e088889
DATA gc<>+408(SB)/4, $0x3e088889
DATA gc<>+412(SB)/4, $0x3e088889
DATA gc<>+416(SB)/4, $0xbd5d0dd1 // c7
DATA gc<>+420(SB)/4, $0xbd5d0dd1
DATA gc<>+424(SB)/4, $0xbd5d0dd1
DATA gc<>+428(SB)/4, $0xbd5d0dd1
DATA gc<>+432(SB)/4, $0xbd5d0dd1
DATA gc<>+436(SB)/4, $0xbd5d0dd1
DATA gc<>+440(SB)/4, $0xbd5d0dd1
DATA gc<>+444(SB)/4, $0xbd5d0dd1
DATA gc<>+448(SB)/4, $0x3fb8aa3b // log2e
DATA gc<>+452(SB)/4, $0x3fb8aa3b
DATA gc<>+456(SB)/4, $0x3fb8aa3b
DATA gc<>+460(SB)/4, $0x3fb8aa3b
DATA gc<>+464(SB)/4, $0x3fb8aa3b
DATA gc<>+468(SB)/4, $0x3fb8aa3b
DATA gc<>+472(SB)/4, $0x3fb8aa3b
DATA gc<>+476(SB)/4, $0x3fb8aa3b
DATA gc<>+480(SB)/4, $0x4b400000 // round
DATA gc<>+484(SB)/4, $0x4b400000
DATA gc<>+488(SB)/4, $0x4b400000
DATA gc<>+492(SB)/4, $0x4b400000
DATA gc<>+496(SB)/4, $0x4b400000
DATA gc<>+500(SB)/4, $0x4b400000
DATA gc<>+504(SB)/4, $0x4b400000
DATA gc<>+508(SB)/4, $0x4b400000
DATA gc<>+512(SB)/4, $0x3f318000 // ln2hi
DATA gc<>+516(SB)/4, $0x3f318000
DATA gc<>+520(SB)/4, $0x3f318000
DATA gc<>+524(SB)/4, $0x3f318000
DATA gc<>+528(SB)/4, $0x3f318000
DATA gc<>+532(SB)/4, $0x3f318000
DATA gc<>+536(SB)/4, $0x3f318000
DATA gc<>+540(SB)/4, $0x3f318000
DATA gc<>+544(SB)/4, $0xb95e8083 // ln2lo
DATA gc<>+548(SB)/4, $0xb95e8083
DATA gc<>+552(SB)/4, $0xb95e8083
DATA gc<>+556(SB)/4, $0xb95e8083
DATA gc<>+560(SB)/4, $0xb95e8083
DATA gc<>+564(SB)/4, $0xb95e8083
DATA gc<>+568(SB)/4, $0xb95e8083
DATA gc<>+572(SB)/4, $0xb95e8083
DATA gc<>+576(SB)/4, $0x39506967 // p0
DATA gc<>+580(SB)/4, $0x39506967
DATA gc<>+584(SB)/4, $0x39506967
DATA gc<>+588(SB)/4, $0x39506967
DATA gc<>+592(SB)/4, $0x39506967
DATA gc<>+596(SB)/4, $0x39506967
DATA gc<>+600(SB)/4, $0x39506967
DATA gc<>+604(SB)/4, $0x39506967
DATA gc<>+608(SB)/4, $0x3ab743ce // p1
DATA gc<>+612(SB)/4, $0x3ab743ce
DATA gc<>+616(SB)/4, $0x3ab743ce
DATA gc<>+620(SB)/4, $0x3ab743ce
DATA gc<>+624(SB)/4, $0x3ab743ce
DATA gc<>+628(SB)/4, $0x3ab743ce
DATA gc<>+632(SB)/4, $0x3ab743ce
DATA gc<>+636(SB)/4, $0x3ab743ce
DATA gc<>+640(SB)/4, $0x3c088908 // p2
DATA gc<>+644(SB)/4, $0x3c088908
DATA gc<>+648(SB)/4, $0x3c088908
DATA gc<>+652(SB)/4, $0x3c088908
DATA gc<>+656(SB)/4, $0x3c088908
DATA gc<>+660(SB)/4, $0x3c088908
DATA gc<>+664(SB)/4, $0x3c088908
DATA gc<>+668(SB)/4, $0x3c088908
DATA gc<>+672(SB)/4, $0x3d2aa9c1 // p3
DATA gc<>+676(SB)/4, $0x3d2aa9c1
DATA gc<>+680(SB)/4, $0x3d2aa9c1
DATA gc<>+684(SB)/4, $0x3d2aa9c1
DATA gc<>+688(SB)/4, $0x3d2aa9c1
DATA gc<>+692(SB)/4, $0x3d2aa9c1
DATA gc<>+696(SB)/4, $0x3d2aa9c1
DATA gc<>+700(SB)/4, $0x3d2aa9c1
DATA gc<>+704(SB)/4, $0x3e2aaaaa // p4
DATA gc<>+708(SB)/4, $0x3e2aaaaa
DATA gc<>+712(SB)/4, $0x3e2aaaaa
DATA gc<>+716(SB)/4, $0x3e2aaaaa
DATA gc<>+720(SB)/4, $0x3e2aaaaa
DATA gc<>+724(SB)/4, $0x3e2aaaaa
DATA gc<>+728(SB)/4, $0x3e2aaaaa
DATA gc<>+732(SB)/4, $0x3e2aaaaa
DATA gc<>+736(SB)/4, $0x3f000000 // p5
DATA gc<>+740(SB)/4, $0x3f000000
DATA gc<>+744(SB)/4, $0x3f000000
DATA gc<>+748(SB)/4, $0x3f000000
DATA gc<>+752(SB)/4, $0x3f000000
DATA gc<>+756(SB)/4, $0x3f000000
DATA gc<>+760(SB)/4, $0x3f000000
DATA gc<>+764(SB)/4, $0x3f000000
DATA gc<>+768(SB)/4, $0x0000007f // bias
DATA gc<>+772(SB)/4, $0x0000007f
DATA gc<>+776(SB)/4, $0x0000007f
DATA gc<>+780(SB)/4, $0x0000007f
DATA gc<>+784(SB)/4, $0x0000007f
DATA gc<>+788(SB)/4, $0x0000007f
DATA gc<>+792(SB)/4, $0x0000007f
DATA gc<>+796(SB)/4, $0x0000007f
DATA gc<>+800(SB)/4, $0x3cb327a4 // c9
DATA gc<>+804(SB)/4, $0x3cb327a4
DATA gc<>+808(SB)/4, $0x3cb327a4
DATA gc<>+812(SB)/4, $0x3cb327a4
DATA gc<>+816(SB)/4, $0x3cb327a4
DATA gc<>+820(SB)/4, $0x3cb327a4
DATA gc<>+824(SB)/4, $0x3cb327a4
DATA gc<>+828(SB)/4, $0x3cb327a4
DATA gc<>+832(SB)/4, $0xbc11371b // c11
DATA gc<>+836(SB)/4, $0xbc11371b
DATA gc<>+840(SB)/4, $0xbc11371b
DATA gc<>+844(SB)/4, $0xbc11371b
DATA gc<>+848(SB)/4, $0xbc11371b
DATA gc<>+852(SB)/4, $0xbc11371b
DATA gc<>+856(SB)/4, $0xbc11371b
DATA gc<>+860(SB)/4, $0xbc11371b
GLOBL gc<>(SB), RODATA|NOPTR, $864

// EXPPOLY8(X, K, R, P) is exp32's reduction and polynomial on eight lanes: K = round(X log2e)
// (as floats), P = e^r for r = X - K ln2 (left in R). The caller applies 2^K.
#define EXPPOLY8(X, K, R, P) \
	VMULPS gc<>+448(SB), X, K; \
	VADDPS gc<>+480(SB), K, K; \
	VSUBPS gc<>+480(SB), K, K; \
	VMULPS gc<>+512(SB), K, R; \
	VSUBPS R, X, R; \
	VMULPS gc<>+544(SB), K, P; \
	VSUBPS P, R, R; \
	VMULPS gc<>+576(SB), R, P; \
	VADDPS gc<>+608(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS gc<>+640(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS gc<>+672(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS gc<>+704(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS gc<>+736(SB), P, P; \
	VMULPS R, P, P; \
	VMULPS R, P, P; \
	VADDPS R, P, P; \
	VADDPS gc<>+96(SB), P, P;

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

// EXPPOLY16 and GELUTANH16 are EXPPOLY8 and GELUTANH8 on sixteen lanes (AVX-512), with
// the constants broadcast from the table; GELUTANH16 also clobbers K1.
#define EXPPOLY16(X, K, R, P) \
	VMULPS.BCST gc<>+448(SB), X, K; \
	VADDPS.BCST gc<>+480(SB), K, K; \
	VSUBPS.BCST gc<>+480(SB), K, K; \
	VMULPS.BCST gc<>+512(SB), K, R; \
	VSUBPS R, X, R; \
	VMULPS.BCST gc<>+544(SB), K, P; \
	VSUBPS P, R, R; \
	VMULPS.BCST gc<>+576(SB), R, P; \
	VADDPS.BCST gc<>+608(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS.BCST gc<>+640(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS.BCST gc<>+672(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS.BCST gc<>+704(SB), P, P; \
	VMULPS R, P, P; \
	VADDPS.BCST gc<>+736(SB), P, P; \
	VMULPS R, P, P; \
	VMULPS R, P, P; \
	VADDPS R, P, P; \
	VADDPS.BCST gc<>+96(SB), P, P;

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


DATA ec<>+0(SB)/4, $0x42b20000 // 89
DATA ec<>+4(SB)/4, $0xc2d00000 // -104
GLOBL ec<>(SB), RODATA|NOPTR, $8

// func expShiftSumAVX2(dst, src *float32, n int, shift float32, acc *[8]float32)
// dst[i] = expf32(src[i] - shift) for n (a multiple of 8) values and acc[i%8] += dst[i], as
// expShiftSum (constants from the GELU table).
TEXT ·expShiftSumAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y8
	MOVQ acc+32(FP), DX
	VMOVUPS (DX), Y9
	VBROADCASTSS ec<>+0(SB), Y14
	VBROADCASTSS ec<>+4(SB), Y15

essLoop:
	CMPQ CX, $8
	JL   essDone
	VMOVUPS (SI), Y0
	VSUBPS Y8, Y0, Y0
	VCMPPS $0x15, Y15, Y0, Y7
	VMINPS Y0, Y14, Y1
	EXPPOLY8(Y1, Y2, Y4, Y5)
	VCVTPS2DQ Y2, Y6
	VPSRAD $1, Y6, Y10
	VPSUBD Y10, Y6, Y11
	VPADDD gc<>+768(SB), Y10, Y10
	VPSLLD $23, Y10, Y10
	VPADDD gc<>+768(SB), Y11, Y11
	VPSLLD $23, Y11, Y11
	VMULPS Y10, Y5, Y5
	VMULPS Y11, Y5, Y5
	VANDPS Y7, Y5, Y5
	VMOVUPS Y5, (DI)
	VADDPS Y5, Y9, Y9
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  essLoop

essDone:
	VMOVUPS Y9, (DX)
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
