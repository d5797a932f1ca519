//go:build ignore

// gelu_gen writes gelu_amd64.s: the GELU kernels in AVX2 and AVX-512 versions, which differ
// in vector width and in how constants and masks are held. Run with go generate;
// TestAssemblyUpToDate fails when gelu_amd64.s differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// tanhSech2 writes, for the lanes of x in R0: R1 = u = geluU(x), R9 = tanh(u) and
// R10 = sech²(u), as tanhSech2 does, operation for operation (no fused multiply-adds).
// Clobbers R2..R8, R11..R13 and, on AVX-512, K1.
func tanhSech2(f *asmgen.File, v asmgen.Vec) {
	r, op := v.R, f.Op
	// u = ((cubic·x)·x·x + x)·scale
	op(v.Bcst("VMULPS"), asmgen.GeluCubic, r(0), r(1))
	op("VMULPS", r(0), r(1), r(1))
	op("VMULPS", r(0), r(1), r(1))
	op("VADDPS", r(1), r(0), r(1))
	op(v.Bcst("VMULPS"), asmgen.GeluScale, r(1), r(1))
	// a = min(|u|, clamp), e = exp32(a+a)
	op(v.Bcst(v.Bitwise("AND")), asmgen.AbsMask, r(1), r(2))
	op(v.Bcst("VMINPS"), asmgen.GeluClamp, r(2), r(2))
	op("VADDPS", r(2), r(2), r(3))
	f.Instr("EXPPOLY%d(%s, %s, %s, %s)", v.Lanes, r(3), r(4), r(5), r(6))
	op("VCVTPS2DQ", r(4), r(7))
	op(v.Bcst("VPADDD"), asmgen.ExpBias, r(7), r(7))
	op("VPSLLD", "$23", r(7), r(7))
	op("VMULPS", r(7), r(6), r(3))
	// r = 1/(e+1), t = 1 - 2r, sech² = ((4e)·r)·r
	op(v.Bcst("VADDPS"), asmgen.One, r(3), r(8))
	op(v.Splat(), asmgen.One, r(7))
	op("VDIVPS", r(8), r(7), r(8))
	op(v.Bcst("VMULPS"), asmgen.Two, r(8), r(9))
	op("VSUBPS", r(9), r(7), r(9))
	op(v.Bcst("VMULPS"), asmgen.Four, r(3), r(10))
	op("VMULPS", r(8), r(10), r(10))
	op("VMULPS", r(8), r(10), r(10))
	// Below seriesMax, t = a + a·q from the odd series in s = a².
	op("VMULPS", r(2), r(2), r(11))
	op(v.Bcst("VMULPS"), asmgen.TanhC11, r(11), r(12))
	for _, c := range []string{asmgen.TanhC9, asmgen.TanhC7, asmgen.TanhC5, asmgen.TanhC3} {
		op(v.Bcst("VADDPS"), c, r(12), r(12))
		op("VMULPS", r(11), r(12), r(12))
	}
	op("VMULPS", r(2), r(12), r(12))
	op("VADDPS", r(2), r(12), r(12))
	if v.Lanes == 16 {
		op("VCMPPS.BCST", "$1", asmgen.TanhSeriesMax, r(2), "K1")
		op("VMOVAPS", r(12), "K1", r(9))
	} else {
		op("VCMPPS", "$1", asmgen.TanhSeriesMax, r(2), r(13))
		op("VBLENDVPS", r(13), r(12), r(9), r(9))
	}
	// t takes u's sign.
	op(v.Bcst(v.Bitwise("AND")), asmgen.SignMask, r(1), r(13))
	op(v.Bitwise("OR"), r(13), r(9), r(9))
}

// forward writes geluFwd: out = 0.5x(1 + tanh(u)).
func forward(f *asmgen.File, v asmgen.Vec) {
	r, op := v.R, f.Op
	f.Linef("// func geluFwd%d%s(out, x *float32, n int)", v.Lanes, v.Suffix)
	f.Linef("// out = 0.5x(1 + tanh(u)) for n (a multiple of %d) values, as geluForwardGo.", v.Lanes)
	f.Linef("TEXT ·geluFwd%d%s(SB), NOSPLIT, $0-24", v.Lanes, v.Suffix)
	f.Instrs("MOVQ out+0(FP), DI", "MOVQ x+8(FP), SI", "MOVQ n+16(FP), CX")
	f.Linef("")
	f.VectorLoop(v, fmt.Sprintf("gf%d", v.Lanes), []string{"SI", "DI"}, func() {
		op("VMOVUPS", "(SI)", r(0))
		tanhSech2(f, v)
		op(v.Bcst("VMULPS"), asmgen.Half, r(0), r(7))
		op(v.Bcst("VADDPS"), asmgen.One, r(9), r(9))
		op("VMULPS", r(9), r(7), r(7))
		op("VMOVUPS", r(7), "(DI)")
	})
}

// backward writes geluBwd: dinp += gelu'(x)·dout with llm.c's formula for gelu'.
func backward(f *asmgen.File, v asmgen.Vec) {
	r, op := v.R, f.Op
	f.Linef("// func geluBwd%d%s(dinp, x, dout *float32, n int)", v.Lanes, v.Suffix)
	f.Linef("// dinp += gelu'(x) dout for n (a multiple of %d) values, as geluBackwardGo.", v.Lanes)
	f.Linef("TEXT ·geluBwd%d%s(SB), NOSPLIT, $0-32", v.Lanes, v.Suffix)
	f.Instrs("MOVQ dinp+0(FP), DI", "MOVQ x+8(FP), SI", "MOVQ dout+16(FP), DX", "MOVQ n+24(FP), CX")
	f.Linef("")
	f.VectorLoop(v, fmt.Sprintf("gb%d", v.Lanes), []string{"SI", "DI", "DX"}, func() {
		op("VMOVUPS", "(SI)", r(0))
		tanhSech2(f, v)
		// slope = ((x·0.5)·sech²)·scale·(1 + (cubic3·x)·x)
		op(v.Bcst("VMULPS"), asmgen.Half, r(0), r(11))
		op("VMULPS", r(10), r(11), r(11))
		op(v.Bcst("VMULPS"), asmgen.GeluScale, r(11), r(11))
		op(v.Bcst("VMULPS"), asmgen.GeluCubic3, r(0), r(12))
		op("VMULPS", r(0), r(12), r(12))
		op(v.Bcst("VADDPS"), asmgen.One, r(12), r(12))
		op("VMULPS", r(12), r(11), r(11))
		// dinp += (0.5(1+t) + slope)·dout
		op(v.Bcst("VADDPS"), asmgen.One, r(9), r(9))
		op(v.Bcst("VMULPS"), asmgen.Half, r(9), r(9))
		op("VADDPS", r(11), r(9), r(9))
		op("VMULPS", "(DX)", r(9), r(9))
		op("VADDPS", "(DI)", r(9), r(9))
		op("VMOVUPS", r(9), "(DI)")
	})
}

func main() {
	asmgen.Main("gelu_gen.go", "gelu_amd64.s", func(f *asmgen.File) {
		f.Linef("#include \"exp32_amd64.h\"")
		f.Linef("")
		for _, v := range []asmgen.Vec{asmgen.AVX2, asmgen.AVX512} {
			forward(f, v)
			backward(f, v)
		}
	})
}
