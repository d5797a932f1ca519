// The float32 exponential (gelu.go's expPoly, fastmath.go's expf32) of gelu_amd64.s,
// fastmath_amd64.s (expShiftSumAVX2) and swiglu_amd64.s (SwiGLU's sigmoid): the constant table,
// which also holds the GELU constants, expf32's limits and the EXPPOLY8/16 sequences. Include
// after textflag.h. The tables are file-local, so each file that includes them holds its own
// copy.

// Eight-lane float32 constants of the exponential and the GELU kernels (gelu.go names them).
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

// EXPPOLY16 is EXPPOLY8 on sixteen lanes (AVX-512), with the constants broadcast from the
// table.
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

// expf32's limits: inputs are clamped to at most 89, and below -104 the result is 0.
DATA ec<>+0(SB)/4, $0x42b20000 // 89
DATA ec<>+4(SB)/4, $0xc2d00000 // -104
GLOBL ec<>(SB), RODATA|NOPTR, $8
