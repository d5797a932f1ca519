//go:build ignore

// exp32_neon_gen writes exp32_arm64.s: the NEON (four-lane) counterparts of the float32
// exponential, GELU and SwiGLU kernels, expShiftSumNEON, geluFwd4NEON, geluBwd4NEON,
// swigluFwd4NEON and swigluBwd4NEON, which compute the same bits as fastmath.go's
// expShiftSum, gelu.go's geluForwardGo and geluBackwardGo and swiglu.go's swigluRangeGo and
// swigluBackwardRangeGo, operation for operation (no fused multiply-adds), and divNEON, the
// rest of the softmax's row pass. Run with go generate;
// TestAssemblyUpToDate fails when exp32_arm64.s differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// The constants live in registers for the whole call, one table row of four lanes each:
// multipliers packed four to a register (read by FMUL by element), the rest repeated over
// the lanes. Rows 0..16 are V15..V31; the kernels of expf32 alone (expShiftSum, SwiGLU) put
// rows 17 and 18 (its limits) in V30 and V31.
const (
	vBias  = 15 // 127, the float32 exponent bias, as int32 lanes
	vMulE  = 16 // log2e, ln2hi, ln2lo, p0
	vMulG  = 17 // cubic, scale, half, two
	vMulG2 = 18 // four, cubic3, c11
	vOne   = 19
	vRound = 20
	vP1    = 21 // p1..p5 in V21..V25
	vC9    = 26 // c9, c7, c5, c3 in V26..V29
	vClamp = 30
	vSerMx = 31
	vMax   = 30 // the exponential's 89
	vMin   = 31 // and -104
)

// Lanes of the packed multiplier rows.
const (
	lLog2e, lLn2Hi, lLn2Lo, lP0   = 0, 1, 2, 3
	lCubic, lScale, lHalf, lTwo   = 0, 1, 2, 3
	lFour, lCubic3, lC11          = 0, 1, 2
	tableRows, limitsRow, rowSize = 19, 17, 16
)

// table is the rows in order: each row's four lanes' bits and a comment.
var table = []struct {
	lanes [4]uint32
	name  string
}{
	{splat(0x0000007f), "bias 127 (int32)"},
	{[4]uint32{0x3fb8aa3b, 0x3f318000, 0xb95e8083, 0x39506967}, "log2e, ln2hi, ln2lo, p0"},
	{[4]uint32{0x3d372713, 0x3f4c4229, 0x3f000000, 0x40000000}, "cubic, scale, half, two"},
	{[4]uint32{0x40800000, 0x3e095d4f, 0xbc11371b, 0}, "four, cubic3, c11"},
	{splat(0x3f800000), "one"},
	{splat(0x4b400000), "round (1.5·2^23)"},
	{splat(0x3ab743ce), "p1"},
	{splat(0x3c088908), "p2"},
	{splat(0x3d2aa9c1), "p3"},
	{splat(0x3e2aaaaa), "p4"},
	{splat(0x3f000000), "p5"},
	{splat(0x3cb327a4), "c9"},
	{splat(0xbd5d0dd1), "c7"},
	{splat(0x3e088889), "c5"},
	{splat(0xbeaaaaab), "c3"},
	{splat(0x41700000), "clamp 15"},
	{splat(0x3e800000), "seriesmax 0.25"},
	{splat(0x42b20000), "expf32's upper clamp 89"},
	{splat(0xc2d00000), "expf32's zero limit -104"},
}

func splat(b uint32) [4]uint32 { return [4]uint32{b, b, b, b} }

func writeTable(f *asmgen.File) {
	if len(table) != tableRows {
		panic(fmt.Sprintf("table has %d rows, want %d", len(table), tableRows))
	}
	f.Linef("// Four-lane float32 constants (gelu.go and fastmath.go name them), one register each.")
	for i, r := range table {
		for lane, bits := range r.lanes {
			comment := ""
			if lane == 0 {
				comment = " // " + r.name
			}
			f.Linef("DATA ac<>+%d(SB)/4, $0x%08x%s", rowSize*i+4*lane, bits, comment)
		}
	}
	f.Linef("GLOBL ac<>(SB), RODATA|NOPTR, $%d", rowSize*len(table))
	f.Linef("")
}

// regList names n consecutive registers from V(first) as an arm64 register list.
func regList(first, n int) string {
	s := "["
	for i := 0; i < n; i++ {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("V%d.S4", first+i)
	}
	return s + "]"
}

// loadRows loads table rows 0..n-1 into V15.. with R5 as the pointer.
func loadRows(f *asmgen.File, n int) {
	f.Instr("MOVD $ac<>(SB), R5")
	for first := 0; first < n; first += 4 {
		k := min(4, n-first)
		if first+k < n {
			f.Instr("VLD1.P %d(R5), %s", rowSize*k, regList(vBias+first, k))
		} else {
			f.Instr("VLD1 (R5), %s", regList(vBias+first, k))
		}
	}
}

// expPoly writes expPoly's reduction and polynomial: K = round(X log2e) (as floats), P = e^r
// for r = X - K ln2 (left in R).
func expPoly(f *asmgen.File, x, k, r, p int) {
	f.FMULElem(k, x, vMulE, lLog2e)
	f.Vec3(asmgen.FADD, k, k, vRound)
	f.Vec3(asmgen.FSUB, k, k, vRound)
	f.FMULElem(r, k, vMulE, lLn2Hi)
	f.Vec3(asmgen.FSUB, r, x, r)
	f.FMULElem(p, k, vMulE, lLn2Lo)
	f.Vec3(asmgen.FSUB, r, r, p)
	// P = ((((p0 r + p1) r + p2) r + p3) r + p4) r + p5, then e^r = P r² + r + 1.
	f.FMULElem(p, r, vMulE, lP0)
	for c := vP1; c < vP1+5; c++ {
		f.Vec3(asmgen.FADD, p, p, c)
		f.Vec3(asmgen.FMUL, p, p, r)
	}
	f.Vec3(asmgen.FMUL, p, p, r)
	f.Vec3(asmgen.FADD, p, p, r)
	f.Vec3(asmgen.FADD, p, p, vOne)
}

// pow2 sets V(d) = 2^I for the int32 lanes of V(i): (I + 127) << 23.
func pow2(f *asmgen.File, d, i int) {
	f.Instr("VADD V%d.S4, V%d.S4, V%d.S4", vBias, i, d)
	f.Instr("VSHL $23, V%d.S4, V%d.S4", d, d)
}

// tanhSech2 writes, for the lanes of x in V0: V1 = u = geluU(x), V9 = tanh(u) and
// V10 = sech²(u), as tanhSech2 does. Clobbers V2..V8 and V11..V13.
func tanhSech2(f *asmgen.File) {
	// u = (((cubic·x)·x)·x + x)·scale
	f.FMULElem(1, 0, vMulG, lCubic)
	f.Vec3(asmgen.FMUL, 1, 1, 0)
	f.Vec3(asmgen.FMUL, 1, 1, 0)
	f.Vec3(asmgen.FADD, 1, 0, 1)
	f.FMULElem(1, 1, vMulG, lScale)
	// a = min(|u|, clamp), e = exp32(a+a) = P·2^K
	f.Vec2(asmgen.FABS, 2, 1)
	f.Vec3(asmgen.FMIN, 2, 2, vClamp)
	f.Vec3(asmgen.FADD, 3, 2, 2)
	expPoly(f, 3, 4, 5, 6)
	f.Vec2(asmgen.FCVTZS, 7, 4)
	pow2(f, 7, 7)
	f.Vec3(asmgen.FMUL, 3, 6, 7)
	// r = 1/(e+1), t = 1 - 2r, sech² = ((4e)·r)·r
	f.Vec3(asmgen.FADD, 8, 3, vOne)
	f.Vec3(asmgen.FDIV, 8, vOne, 8)
	f.FMULElem(9, 8, vMulG, lTwo)
	f.Vec3(asmgen.FSUB, 9, vOne, 9)
	f.FMULElem(10, 3, vMulG2, lFour)
	f.Vec3(asmgen.FMUL, 10, 10, 8)
	f.Vec3(asmgen.FMUL, 10, 10, 8)
	// Below seriesmax (not for NaN), t = a + a·q from the odd series in s = a².
	f.Vec3(asmgen.FMUL, 11, 2, 2)
	f.FMULElem(12, 11, vMulG2, lC11)
	for c := vC9; c < vC9+4; c++ {
		f.Vec3(asmgen.FADD, 12, 12, c)
		f.Vec3(asmgen.FMUL, 12, 12, 11)
	}
	f.Vec3(asmgen.FMUL, 12, 2, 12)
	f.Vec3(asmgen.FADD, 12, 2, 12)
	f.Vec3(asmgen.FCMGT, 13, vSerMx, 2)
	f.Instr("VBIT V13.B16, V12.B16, V9.B16")
	// t takes u's sign.
	f.Instr("VUSHR $31, V1.S4, V13.S4")
	f.Instr("VSHL $31, V13.S4, V13.S4")
	f.Instr("VORR V13.B16, V9.B16, V9.B16")
}

// loop writes a loop over the R3 values left, four at a time, around body; it returns at
// label+"done".
func loop(f *asmgen.File, label string, lanes int, body func()) {
	f.Linef("%sloop:", label)
	f.Instr("CMP $%d, R3", lanes)
	f.Instr("BLT %sdone", label)
	body()
	f.Instr("SUB $%d, R3, R3", lanes)
	f.Instr("B %sloop", label)
	f.Linef("")
	f.Linef("%sdone:", label)
}

func forward(f *asmgen.File) {
	f.Linef("// func geluFwd4NEON(out, x *float32, n int)")
	f.Linef("// out = 0.5x(1 + tanh(u)) for n (a multiple of 4) values, as geluForwardGo.")
	f.Linef("TEXT ·geluFwd4NEON(SB), NOSPLIT, $0-24")
	f.Instrs("MOVD out+0(FP), R0", "MOVD x+8(FP), R1", "MOVD n+16(FP), R3")
	loadRows(f, limitsRow)
	f.Linef("")
	loop(f, "gf", 4, func() {
		f.Instr("VLD1.P 16(R1), [V0.S4]")
		tanhSech2(f)
		f.FMULElem(7, 0, vMulG, lHalf)
		f.Vec3(asmgen.FADD, 9, vOne, 9)
		f.Vec3(asmgen.FMUL, 7, 7, 9)
		f.Instr("VST1.P [V7.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

func backward(f *asmgen.File) {
	f.Linef("// func geluBwd4NEON(dinp, x, dout *float32, n int)")
	f.Linef("// dinp += gelu'(x) dout for n (a multiple of 4) values, as geluBackwardGo.")
	f.Linef("TEXT ·geluBwd4NEON(SB), NOSPLIT, $0-32")
	f.Instrs("MOVD dinp+0(FP), R0", "MOVD x+8(FP), R1", "MOVD dout+16(FP), R2", "MOVD n+24(FP), R3")
	loadRows(f, limitsRow)
	f.Linef("")
	loop(f, "gb", 4, func() {
		f.Instr("VLD1.P 16(R1), [V0.S4]")
		tanhSech2(f)
		// slope = (((x·0.5)·sech²)·scale)·(1 + (cubic3·x)·x)
		f.FMULElem(11, 0, vMulG, lHalf)
		f.Vec3(asmgen.FMUL, 11, 11, 10)
		f.FMULElem(11, 11, vMulG, lScale)
		f.FMULElem(12, 0, vMulG2, lCubic3)
		f.Vec3(asmgen.FMUL, 12, 12, 0)
		f.Vec3(asmgen.FADD, 12, vOne, 12)
		f.Vec3(asmgen.FMUL, 11, 11, 12)
		// dinp += (0.5(1+t) + slope)·dout
		f.Vec3(asmgen.FADD, 9, vOne, 9)
		f.FMULElem(9, 9, vMulG, lHalf)
		f.Vec3(asmgen.FADD, 9, 9, 11)
		f.Instr("VLD1.P 16(R2), [V13.S4]")
		f.Instr("VLD1 (R0), [V14.S4]")
		f.Vec3(asmgen.FMUL, 9, 9, 13)
		f.Vec3(asmgen.FADD, 9, 14, 9)
		f.Instr("VST1.P [V9.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

// loadExpConstants sets the registers expf32 reads: V11 = 0, table rows 0..10 in V15..V25
// and the limits in V30, V31.
func loadExpConstants(f *asmgen.File) {
	f.Instr("VEOR V11.B16, V11.B16, V11.B16")
	loadRows(f, vP1+5-vBias)
	f.Instr("MOVD $ac<>+%d(SB), R5", rowSize*limitsRow)
	f.Instr("VLD1 (R5), [V%d.S4, V%d.S4]", vMax, vMin)
}

// expf32 sets V5 = expf32 of the lanes of V(x) (not V1..V8), as fastmath.go's expf32, with
// the registers loadExpConstants sets. Clobbers V1..V8.
func expf32(f *asmgen.File, x int) {
	// Lanes below -104 become 0 (not NaN: the compare is false for it).
	f.Vec3(asmgen.FCMGT, 1, vMin, x)
	f.Vec3(asmgen.FMIN, 2, x, vMax)
	expPoly(f, 2, 3, 4, 5)
	// P·2^K in two halves, 2^(K>>1) then 2^(K-(K>>1)), as expf32.
	f.Vec2(asmgen.FCVTZS, 6, 3)
	f.SSHR(7, 6, 1)
	f.Instr("VSUB V7.S4, V6.S4, V8.S4")
	pow2(f, 7, 7)
	pow2(f, 8, 8)
	f.Vec3(asmgen.FMUL, 5, 5, 7)
	f.Vec3(asmgen.FMUL, 5, 5, 8)
	f.Instr("VBIT V1.B16, V11.B16, V5.B16")
}

// expShiftSum writes expShiftSumNEON: eight values a step, in two registers, so that the
// accumulators V12 and V13 hold the eight lanes of acc.
func expShiftSum(f *asmgen.File) {
	f.Linef("// func expShiftSumNEON(dst, src *float32, n int, shift float32, acc *[8]float32)")
	f.Linef("// dst[i] = expf32(src[i] - shift) for n (a multiple of 8) values and acc[i%%8] += dst[i], as")
	f.Linef("// expShiftSum.")
	f.Linef("TEXT ·expShiftSumNEON(SB), NOSPLIT, $0-40")
	f.Instrs("MOVD dst+0(FP), R0", "MOVD src+8(FP), R1", "MOVD n+16(FP), R3", "MOVD acc+32(FP), R4")
	f.Instrs("FMOVS shift+24(FP), F14", "VDUP V14.S[0], V14.S4")
	f.Instr("VLD1 (R4), [V12.S4, V13.S4]")
	loadExpConstants(f)
	f.Linef("")
	loop(f, "es", 8, func() {
		for acc := 12; acc <= 13; acc++ {
			f.Instr("VLD1.P 16(R1), [V0.S4]")
			f.Vec3(asmgen.FSUB, 0, 0, 14)
			expf32(f, 0)
			f.Instr("VST1.P [V5.S4], 16(R0)")
			f.Vec3(asmgen.FADD, acc, acc, 5)
		}
	})
	f.Instr("VST1 [V12.S4, V13.S4], (R4)")
	f.Instr("RET")
	f.Linef("")
}

// div writes divNEON, the softmax's division of a row by its sum: x[i] /= s.
func div(f *asmgen.File) {
	f.Linef("// func divNEON(x *float32, n int, s float32)")
	f.Linef("// x[i] /= s for n (a multiple of 4) values, as divScalar.")
	f.Linef("TEXT ·divNEON(SB), NOSPLIT, $0-20")
	f.Instrs("MOVD x+0(FP), R1", "MOVD n+8(FP), R3", "FMOVS s+16(FP), F1", "VDUP V1.S[0], V1.S4")
	loop(f, "dv", 4, func() {
		f.Instr("VLD1 (R1), [V0.S4]")
		f.Vec3(asmgen.FDIV, 0, 0, 1)
		f.Instr("VST1.P [V0.S4], 16(R1)")
	})
	f.Instr("RET")
	f.Linef("")
}

// sigmoid sets V5 = sigmoidf of the lanes of V0: 1/(1+expf32(-g)). Clobbers V1..V9.
func sigmoid(f *asmgen.File) {
	f.Vec2(asmgen.FNEG, 9, 0)
	expf32(f, 9)
	f.Vec3(asmgen.FADD, 5, vOne, 5)
	f.Vec3(asmgen.FDIV, 5, vOne, 5)
}

func swigluForward(f *asmgen.File) {
	f.Linef("// func swigluFwd4NEON(out, gate, up *float32, n int)")
	f.Linef("// out = (g·sigmoid(g))·up for n (a multiple of 4) values, as swigluRangeGo.")
	f.Linef("TEXT ·swigluFwd4NEON(SB), NOSPLIT, $0-32")
	f.Instrs("MOVD out+0(FP), R0", "MOVD gate+8(FP), R1", "MOVD up+16(FP), R2", "MOVD n+24(FP), R3")
	loadExpConstants(f)
	f.Linef("")
	loop(f, "sf", 4, func() {
		f.Instr("VLD1.P 16(R1), [V0.S4]")
		sigmoid(f)
		f.Vec3(asmgen.FMUL, 6, 0, 5)
		f.Instr("VLD1.P 16(R2), [V7.S4]")
		f.Vec3(asmgen.FMUL, 6, 6, 7)
		f.Instr("VST1.P [V6.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

func swigluBackward(f *asmgen.File) {
	f.Linef("// func swigluBwd4NEON(dgate, dup, gate, up, dout *float32, n int)")
	f.Linef("// dup += dout·(g·s) and dgate += (dout·up)·(s·(1 + g·(1−s))), s = sigmoid(g), for n (a multiple")
	f.Linef("// of 4) values, as swigluBackwardRangeGo.")
	f.Linef("TEXT ·swigluBwd4NEON(SB), NOSPLIT, $0-48")
	f.Instrs("MOVD dgate+0(FP), R0", "MOVD dup+8(FP), R4", "MOVD gate+16(FP), R1", "MOVD up+24(FP), R2",
		"MOVD dout+32(FP), R6", "MOVD n+40(FP), R3")
	loadExpConstants(f)
	f.Linef("")
	loop(f, "sb", 4, func() {
		f.Instr("VLD1.P 16(R1), [V0.S4]")
		sigmoid(f)
		f.Instr("VLD1.P 16(R6), [V12.S4] // dout")
		f.Vec3(asmgen.FMUL, 6, 0, 5)
		f.Vec3(asmgen.FMUL, 6, 12, 6)
		f.Instr("VLD1 (R4), [V13.S4]")
		f.Vec3(asmgen.FADD, 13, 13, 6)
		f.Instr("VST1.P [V13.S4], 16(R4)")
		f.Vec3(asmgen.FSUB, 7, vOne, 5)
		f.Vec3(asmgen.FMUL, 7, 0, 7)
		f.Vec3(asmgen.FADD, 7, vOne, 7)
		f.Vec3(asmgen.FMUL, 7, 5, 7)
		f.Instr("VLD1.P 16(R2), [V8.S4] // up")
		f.Vec3(asmgen.FMUL, 8, 12, 8)
		f.Vec3(asmgen.FMUL, 8, 8, 7)
		f.Instr("VLD1 (R0), [V14.S4]")
		f.Vec3(asmgen.FADD, 14, 14, 8)
		f.Instr("VST1.P [V14.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

func main() {
	asmgen.Main("exp32_neon_gen.go", "exp32_arm64.s", func(f *asmgen.File) {
		writeTable(f)
		expShiftSum(f)
		forward(f)
		backward(f)
		div(f)
		swigluForward(f)
		swigluBackward(f)
	})
}
