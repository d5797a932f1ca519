//go:build ignore

// exp32_gen writes exp32_amd64.h: the constant table of the float32 exponential and GELU
// kernels, eight lanes per constant, and the exponential's reduction and polynomial as
// AVX2 and AVX-512 macros. Run with go generate; TestAssemblyUpToDate fails when
// exp32_amd64.h differs from its output.
package main

import (
	"fmt"
	"os"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// row is one constant of the table: its operand, its float32 bits and the name beside it.
type row struct {
	operand string
	bits    uint32
	name    string
}

// table is gc<> in order; each row fills 32 bytes, so AVX2 reads it as a vector.
var table = []row{
	{asmgen.GeluCubic, 0x3d372713, "cubic"},
	{asmgen.GeluScale, 0x3f4c4229, "scale"},
	{asmgen.Half, 0x3f000000, "half"},
	{asmgen.One, 0x3f800000, "one"},
	{asmgen.Two, 0x40000000, "two"},
	{asmgen.Four, 0x40800000, "four"},
	{asmgen.GeluCubic3, 0x3e095d4f, "cubic3"},
	{asmgen.AbsMask, 0x7fffffff, "absmask"},
	{asmgen.SignMask, 0x80000000, "signmask"},
	{asmgen.GeluClamp, 0x41700000, "clamp"},
	{asmgen.TanhSeriesMax, 0x3e800000, "seriesmax (0.25)"},
	{asmgen.TanhC3, 0xbeaaaaab, "c3"},
	{asmgen.TanhC5, 0x3e088889, "c5"},
	{asmgen.TanhC7, 0xbd5d0dd1, "c7"},
	{asmgen.Log2E, 0x3fb8aa3b, "log2e"},
	{asmgen.RoundMagic, 0x4b400000, "round"},
	{asmgen.Ln2Hi, 0x3f318000, "ln2hi"},
	{asmgen.Ln2Lo, 0xb95e8083, "ln2lo"},
	{asmgen.ExpP0, 0x39506967, "p0"},
	{asmgen.ExpP1, 0x3ab743ce, "p1"},
	{asmgen.ExpP2, 0x3c088908, "p2"},
	{asmgen.ExpP3, 0x3d2aa9c1, "p3"},
	{asmgen.ExpP4, 0x3e2aaaaa, "p4"},
	{asmgen.ExpP5, 0x3f000000, "p5"},
	{asmgen.ExpBias, 0x0000007f, "bias"},
	{asmgen.TanhC9, 0x3cb327a4, "c9"},
	{asmgen.TanhC11, 0xbc11371b, "c11"},
}

// writeTable writes gc<>, failing if an operand in asmgen is not its row's offset.
func writeTable(f *asmgen.File) {
	f.Linef("// Eight-lane float32 constants of the exponential and the GELU kernels (gelu.go names them).")
	for i, r := range table {
		if want := fmt.Sprintf("gc<>+%d(SB)", 32*i); r.operand != want {
			fmt.Fprintf(os.Stderr, "%s is %s, but row %d of the table is at %s\n", r.name, r.operand, i, want)
			os.Exit(1)
		}
		f.Linef("DATA gc<>+%d(SB)/4, $0x%08x // %s", 32*i, r.bits, r.name)
		for lane := 1; lane < 8; lane++ {
			f.Linef("DATA gc<>+%d(SB)/4, $0x%08x", 32*i+4*lane, r.bits)
		}
	}
	f.Linef("GLOBL gc<>(SB), RODATA|NOPTR, $%d", 32*len(table))
	f.Linef("")
}

// expPoly writes exp32's reduction and polynomial: K = round(X log2e) (as floats), P = e^r
// for r = X - K ln2 (left in R), ln2 in two parts so that K ln2hi is exact.
func expPoly(f *asmgen.File, v asmgen.Vec) {
	op := f.Op
	op(v.Bcst("VMULPS"), asmgen.Log2E, "X", "K")
	op(v.Bcst("VADDPS"), asmgen.RoundMagic, "K", "K")
	op(v.Bcst("VSUBPS"), asmgen.RoundMagic, "K", "K")
	op(v.Bcst("VMULPS"), asmgen.Ln2Hi, "K", "R")
	op("VSUBPS", "R", "X", "R")
	op(v.Bcst("VMULPS"), asmgen.Ln2Lo, "K", "P")
	op("VSUBPS", "P", "R", "R")
	// P = ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5, then e^r = P r² + r + 1.
	op(v.Bcst("VMULPS"), asmgen.ExpP0, "R", "P")
	for _, c := range []string{asmgen.ExpP1, asmgen.ExpP2, asmgen.ExpP3, asmgen.ExpP4, asmgen.ExpP5} {
		op(v.Bcst("VADDPS"), c, "P", "P")
		op("VMULPS", "R", "P", "P")
	}
	op("VMULPS", "R", "P", "P")
	op("VADDPS", "R", "P", "P")
	op(v.Bcst("VADDPS"), asmgen.One, "P", "P")
}

// scaleSplit writes P = P·2^K, K integral floats, as two factors 2^(K>>1) and
// 2^(K-(K>>1)), each a normal float where 2^K alone would not be.
func scaleSplit(f *asmgen.File, v asmgen.Vec) {
	op := f.Op
	op("VCVTPS2DQ", "K", "I")
	op("VPSRAD", "$1", "I", "A")
	op("VPSUBD", "A", "I", "B")
	op(v.Bcst("VPADDD"), asmgen.ExpBias, "A", "A")
	op("VPSLLD", "$23", "A", "A")
	op(v.Bcst("VPADDD"), asmgen.ExpBias, "B", "B")
	op("VPSLLD", "$23", "B", "B")
	op("VMULPS", "A", "P", "P")
	op("VMULPS", "B", "P", "P")
}

func main() {
	asmgen.Main("exp32_gen.go", "exp32_amd64.h", func(f *asmgen.File) {
		f.Linef("// The float32 exponential (gelu.go's expPoly, fastmath.go's expf32) of gelu_amd64.s,")
		f.Linef("// fastmath_amd64.s (expShiftSumAVX2) and swiglu_amd64.s (SwiGLU's sigmoid): the constant table,")
		f.Linef("// which also holds the GELU constants, expf32's limits and the EXPPOLY and EXPSCALE sequences.")
		f.Linef("// Include after textflag.h. The tables are file-local, so each file that includes them holds")
		f.Linef("// its own copy.")
		f.Linef("")
		writeTable(f)
		f.Linef("// EXPPOLY8(X, K, R, P) is exp32's reduction and polynomial on eight lanes: K = round(X log2e)")
		f.Linef("// (as floats), P = e^r for r = X - K ln2 (left in R). The caller applies 2^K.")
		f.Define("EXPPOLY8(X, K, R, P)", func(m *asmgen.File) { expPoly(m, asmgen.AVX2) })
		f.Linef("")
		f.Linef("// EXPPOLY16 is EXPPOLY8 on sixteen lanes (AVX-512), with the constants broadcast from the")
		f.Linef("// table.")
		f.Define("EXPPOLY16(X, K, R, P)", func(m *asmgen.File) { expPoly(m, asmgen.AVX512) })
		f.Linef("")
		f.Linef("// EXPSCALE8(K, P, I, A, B) applies EXPPOLY8's 2^K to P in two halves, as expf32 does, so that")
		f.Linef("// K down to -150 works; I, A and B are scratch. EXPSCALE16 is its sixteen-lane twin.")
		f.Define("EXPSCALE8(K, P, I, A, B)", func(m *asmgen.File) { scaleSplit(m, asmgen.AVX2) })
		f.Define("EXPSCALE16(K, P, I, A, B)", func(m *asmgen.File) { scaleSplit(m, asmgen.AVX512) })
		f.Linef("")
		f.Linef("// expf32's limits: inputs are clamped to at most 89, and below -104 the result is 0.")
		f.Linef("DATA %s/4, $0x42b20000 // 89", asmgen.Exp32Max)
		f.Linef("DATA %s/4, $0xc2d00000 // -104", asmgen.Exp32Min)
		f.Linef("GLOBL ec<>(SB), RODATA|NOPTR, $8")
	})
}
