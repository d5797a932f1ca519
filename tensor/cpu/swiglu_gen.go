//go:build ignore

// swiglu_gen writes swiglu_amd64.s: the SwiGLU kernels in AVX2 and AVX-512 versions, which
// differ in vector width and in how constants and masks are held. Run with go generate;
// TestAssemblyUpToDate fails when swiglu_amd64.s differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// sigmoid writes s = 1/(1+expf32(-g)) for the lanes of register g, as sigmoidf: the
// exponential is expShiftSumAVX2's (EXPSCALE's 2^k in two halves, 0 below -104, NaN kept).
// Needs R13 = 1, R14 = 89, R15 = -104; clobbers R1..R7, R10, R11 and, on AVX-512, K1.
func sigmoid(f *asmgen.File, v asmgen.Vec, g, s string) {
	r, op := v.R, f.Op
	keep := r(7) // lanes where -g is not below -104 (or is NaN)
	if v.Lanes == 16 {
		keep = "K1"
	}
	op(v.Bcst(v.Bitwise("XOR")), asmgen.SignMask, g, r(1))
	op("VCMPPS", "$0x15", r(15), r(1), keep)
	op("VMINPS", r(1), r(14), r(1))
	f.Instr("EXPPOLY%d(%s, %s, %s, %s)", v.Lanes, r(1), r(2), r(4), r(5))
	f.Instr("EXPSCALE%d(%s, %s, %s, %s, %s)", v.Lanes, r(2), r(5), r(6), r(10), r(11))
	// Zero the dropped lanes: AVX-512 moves the kept ones into a zeroed register under K1,
	// AVX2 ANDs with the compare's all-ones lanes.
	e := r(5)
	if v.Lanes == 16 {
		e = r(7)
		op(v.Bitwise("XOR"), e, e, e)
		op("VMOVAPS", r(5), "K1", e)
	} else {
		op(v.Bitwise("AND"), keep, r(5), r(5))
	}
	op("VADDPS", r(13), e, e)
	op("VDIVPS", e, r(13), s)
}

// loadSigmoidConstants sets the registers sigmoid needs.
func loadSigmoidConstants(f *asmgen.File, v asmgen.Vec) {
	f.Op("VBROADCASTSS", asmgen.One, v.R(13))
	f.Op("VBROADCASTSS", asmgen.Exp32Max, v.R(14))
	f.Op("VBROADCASTSS", asmgen.Exp32Min, v.R(15))
}

// forward writes swigluFwd: out = (g·sigmoid(g))·up.
func forward(f *asmgen.File, v asmgen.Vec) {
	r, op := v.R, f.Op
	f.Linef("// func swigluFwd%d%s(out, gate, up *float32, n int)", v.Lanes, v.Suffix)
	f.Linef("// out = (g·sigmoid(g))·up for n (a multiple of %d) values, as swigluRangeGo.", v.Lanes)
	f.Linef("TEXT ·swigluFwd%d%s(SB), NOSPLIT, $0-32", v.Lanes, v.Suffix)
	f.Instrs("MOVQ out+0(FP), DI", "MOVQ gate+8(FP), SI", "MOVQ up+16(FP), DX", "MOVQ n+24(FP), CX")
	loadSigmoidConstants(f, v)
	f.Linef("")
	f.VectorLoop(v, fmt.Sprintf("sf%d", v.Lanes), []string{"SI", "DX", "DI"}, func() {
		op("VMOVUPS", "(SI)", r(0))
		sigmoid(f, v, r(0), r(8))
		op("VMULPS", r(8), r(0), r(8))
		op("VMULPS", "(DX)", r(8), r(8))
		op("VMOVUPS", r(8), "(DI)")
	})
}

// backward writes swigluBwd: dup += dout·(g·s), dgate += (dout·up)·(s·(1 + g·(1−s))).
func backward(f *asmgen.File, v asmgen.Vec) {
	r, op := v.R, f.Op
	f.Linef("// func swigluBwd%d%s(dgate, dup, gate, up, dout *float32, n int)", v.Lanes, v.Suffix)
	f.Linef("// dup += dout·(g·s) and dgate += (dout·up)·(s·(1 + g·(1−s))), s = sigmoid(g), for n (a multiple")
	f.Linef("// of %d) values, as swigluBackwardRangeGo.", v.Lanes)
	f.Linef("TEXT ·swigluBwd%d%s(SB), NOSPLIT, $0-48", v.Lanes, v.Suffix)
	f.Instrs("MOVQ dgate+0(FP), DI", "MOVQ dup+8(FP), R8", "MOVQ gate+16(FP), SI", "MOVQ up+24(FP), DX",
		"MOVQ dout+32(FP), R9", "MOVQ n+40(FP), CX")
	loadSigmoidConstants(f, v)
	f.Linef("")
	f.VectorLoop(v, fmt.Sprintf("sb%d", v.Lanes), []string{"SI", "DX", "R8", "R9", "DI"}, func() {
		g, s, dout := r(0), r(8), r(9)
		op("VMOVUPS", "(SI)", g)
		sigmoid(f, v, g, s)
		op("VMOVUPS", "(R9)", dout)
		op("VMULPS", s, g, r(1))
		op("VMULPS", r(1), dout, r(1))
		op("VADDPS", "(R8)", r(1), r(1))
		op("VMOVUPS", r(1), "(R8)")
		op("VSUBPS", s, r(13), r(2))
		op("VMULPS", r(2), g, r(2))
		op("VADDPS", r(13), r(2), r(2))
		op("VMULPS", r(2), s, r(2))
		op("VMULPS", "(DX)", dout, r(3))
		op("VMULPS", r(2), r(3), r(3))
		op("VADDPS", "(DI)", r(3), r(3))
		op("VMOVUPS", r(3), "(DI)")
	})
}

func main() {
	asmgen.Main("swiglu_gen.go", "swiglu_amd64.s", func(f *asmgen.File) {
		f.Linef("#include \"exp32_amd64.h\"")
		f.Linef("")
		f.Linef("// Products and sums round one at a time, in the order of the Go code in swiglu.go,")
		f.Linef("// so the bits agree.")
		f.Linef("")
		for _, v := range []asmgen.Vec{asmgen.AVX2, asmgen.AVX512} {
			forward(f, v)
			backward(f, v)
		}
	})
}
