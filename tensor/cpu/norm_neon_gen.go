//go:build ignore

// norm_neon_gen writes norm_arm64.s: the NEON LayerNorm and RMSNorm kernels of norm_arm64.go.
// Every product and sum is rounded on its own (no fused multiply-adds) in the order of the Go
// loops in norm.go; the row sums keep that code's eight lanes (element i in lane i%8, two
// registers of four) and add them up in lanes8Sum's tree, so the bits agree with the portable
// loops and with the AVX2 kernels. Run with go generate; TestAssemblyUpToDate fails when
// norm_arm64.s differs from its output.
package main

import "github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"

// hsum8 sets lane 0 of V(t) to lanes8Sum of the eight lanes in V(lo) (0..3) and V(hi)
// (4..7): t = lo+hi holds a_k + a_(k+4); adding its halves crosswise gives (t0+t2, t1+t3),
// and those two are added last. Clobbers V(u).
func hsum8(f *asmgen.File, t, lo, hi, u int) {
	f.Vec3(asmgen.FADD, t, lo, hi)
	f.Instr("VEXT $8, V%d.B16, V%d.B16, V%d.B16", t, t, u)
	f.Vec3(asmgen.FADD, t, t, u)
	f.Instr("VDUP V%d.S[1], V%d.S4", t, u)
	f.Instr("FADDS F%d, F%d, F%d", u, t, t)
}

// load8 loads eight values from R(p), advancing it, into V(a) and V(a+1).
func load8(f *asmgen.File, p, a int) {
	f.Instr("VLD1.P 32(R%d), [V%d.S4, V%d.S4]", p, a, a+1)
}

func lnForward(f *asmgen.File) {
	f.Linef("// func lnFwdRowNEON(out, x, w, b *float32, n int, cf float32, stats *[2]float32)")
	f.Linef("// lnForwardRowGo for n (a multiple of 8, > 0) columns; cf = float32(n). stats gets mean, rstd.")
	f.Linef("TEXT ·lnFwdRowNEON(SB), NOSPLIT, $0-56")
	f.Instrs("MOVD out+0(FP), R0", "MOVD x+8(FP), R1", "MOVD w+16(FP), R2", "MOVD b+24(FP), R4",
		"MOVD n+32(FP), R3", "FMOVS cf+40(FP), F30", "MOVD stats+48(FP), R5")
	f.Instrs("MOVD R1, R6", "MOVD R3, R7", "VEOR V0.B16, V0.B16, V0.B16", "VEOR V1.B16, V1.B16, V1.B16")
	f.Arm64Loop("lnfm", "R7", 8, func() {
		load8(f, 6, 2)
		f.Vec3(asmgen.FADD, 0, 0, 2)
		f.Vec3(asmgen.FADD, 1, 1, 3)
	})
	hsum8(f, 16, 0, 1, 17)
	f.Instrs("FDIVS F30, F16, F16", "FMOVS F16, 0(R5)", "VDUP V16.S[0], V16.S4 // mean")
	f.Instrs("MOVD R1, R6", "MOVD R3, R7", "VEOR V0.B16, V0.B16, V0.B16", "VEOR V1.B16, V1.B16, V1.B16")
	f.Arm64Loop("lnfv", "R7", 8, func() {
		load8(f, 6, 2)
		for k := 0; k < 2; k++ {
			f.Vec3(asmgen.FSUB, 2+k, 2+k, 16)
			f.Vec3(asmgen.FMUL, 2+k, 2+k, 2+k)
			f.Vec3(asmgen.FADD, k, k, 2+k)
		}
	})
	hsum8(f, 18, 0, 1, 19)
	f.Instrs("FDIVS F30, F18, F18", "MOVD $lnc<>(SB), R6", "FMOVS 0(R6), F19", "FADDS F19, F18, F18",
		"FSQRTS F18, F18", "FMOVS 4(R6), F19", "FDIVS F18, F19, F19", "FMOVS F19, 4(R5)", "VDUP V19.S[0], V19.S4 // rstd")
	f.Arm64Loop("lnfo", "R3", 8, func() {
		load8(f, 1, 2)
		f.Instr("VLD1.P 32(R2), [V4.S4, V5.S4]")
		f.Instr("VLD1.P 32(R4), [V6.S4, V7.S4]")
		for k := 0; k < 2; k++ {
			f.Vec3(asmgen.FSUB, 2+k, 2+k, 16)
			f.Vec3(asmgen.FMUL, 2+k, 19, 2+k)
			f.Vec3(asmgen.FMUL, 2+k, 2+k, 4+k)
			f.Vec3(asmgen.FADD, 2+k, 2+k, 6+k)
		}
		f.Instr("VST1.P [V2.S4, V3.S4], 32(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

// lnNormDn sets V(nrm) = (x-m)·s and V(dn) = w·dout for the four values in V(x), V(w), V(d);
// V16 holds m, V17 s.
func lnNormDn(f *asmgen.File, nrm, dn, x, w, d int) {
	f.Vec3(asmgen.FSUB, nrm, x, 16)
	f.Vec3(asmgen.FMUL, nrm, nrm, 17)
	f.Vec3(asmgen.FMUL, dn, w, d)
}

func lnBackward(f *asmgen.File) {
	f.Linef("// func lnBwdRowNEON(dinp, dout, x, w *float32, n int, m, s, cf float32)")
	f.Linef("// lnBackwardRowGo for n (a multiple of 8, > 0) columns; cf = float32(n).")
	f.Linef("TEXT ·lnBwdRowNEON(SB), NOSPLIT, $0-52")
	f.Instrs("MOVD dinp+0(FP), R0", "MOVD dout+8(FP), R2", "MOVD x+16(FP), R1", "MOVD w+24(FP), R4",
		"MOVD n+32(FP), R3", "FMOVS m+40(FP), F16", "FMOVS s+44(FP), F17", "FMOVS cf+48(FP), F30",
		"VDUP V16.S[0], V16.S4", "VDUP V17.S[0], V17.S4")
	f.Instrs("MOVD R1, R5", "MOVD R2, R6", "MOVD R4, R7", "MOVD R3, R8")
	for v := 0; v < 4; v++ {
		f.Instr("VEOR V%d.B16, V%d.B16, V%d.B16", v, v, v)
	}
	// Lanes 0..3 of the mean sum in V0, 4..7 in V1; of the norm sum in V2, V3.
	f.Arm64Loop("lnbs", "R8", 8, func() {
		load8(f, 5, 4)
		f.Instr("VLD1.P 32(R7), [V6.S4, V7.S4]")
		f.Instr("VLD1.P 32(R6), [V8.S4, V9.S4]")
		for k := 0; k < 2; k++ {
			lnNormDn(f, 10+k, 12+k, 4+k, 6+k, 8+k)
			f.Vec3(asmgen.FADD, k, k, 12+k)
			f.Vec3(asmgen.FMUL, 12+k, 12+k, 10+k)
			f.Vec3(asmgen.FADD, 2+k, 2+k, 12+k)
		}
	})
	hsum8(f, 18, 0, 1, 20)
	hsum8(f, 19, 2, 3, 20)
	f.Instrs("FDIVS F30, F18, F18", "FDIVS F30, F19, F19", "VDUP V18.S[0], V18.S4 // dnormMean",
		"VDUP V19.S[0], V19.S4 // dnormNormMean")
	f.Arm64Loop("lnbo", "R3", 8, func() {
		load8(f, 1, 4)
		f.Instr("VLD1.P 32(R4), [V6.S4, V7.S4]")
		f.Instr("VLD1.P 32(R2), [V8.S4, V9.S4]")
		f.Instr("VLD1 (R0), [V14.S4, V15.S4]")
		for k := 0; k < 2; k++ {
			lnNormDn(f, 10+k, 12+k, 4+k, 6+k, 8+k)
			f.Vec3(asmgen.FSUB, 12+k, 12+k, 18)
			f.Vec3(asmgen.FMUL, 10+k, 10+k, 19)
			f.Vec3(asmgen.FSUB, 12+k, 12+k, 10+k)
			f.Vec3(asmgen.FMUL, 12+k, 12+k, 17)
			f.Vec3(asmgen.FADD, 14+k, 14+k, 12+k)
		}
		f.Instr("VST1.P [V14.S4, V15.S4], 32(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

func rmsSumSquares(f *asmgen.File) {
	f.Linef("// func rmsSumSquares8NEON(x *float32, n int, acc *[8]float32)")
	f.Linef("// acc[i%%8] += x[i]² for n (a multiple of 8) values, in order of i.")
	f.Linef("TEXT ·rmsSumSquares8NEON(SB), NOSPLIT, $0-24")
	f.Instrs("MOVD x+0(FP), R1", "MOVD n+8(FP), R3", "MOVD acc+16(FP), R5", "VLD1 (R5), [V0.S4, V1.S4]")
	f.Arm64Loop("ssq", "R3", 8, func() {
		load8(f, 1, 2)
		for k := 0; k < 2; k++ {
			f.Vec3(asmgen.FMUL, 2+k, 2+k, 2+k)
			f.Vec3(asmgen.FADD, k, k, 2+k)
		}
	})
	f.Instrs("VST1 [V0.S4, V1.S4], (R5)", "RET")
	f.Linef("")
}

func rmsDot3(f *asmgen.File) {
	f.Linef("// func rmsDot3x8NEON(a, b, c *float32, n int, acc *[8]float32)")
	f.Linef("// acc[i%%8] += (a[i]·b[i])·c[i] for n (a multiple of 8) values, in order of i.")
	f.Linef("TEXT ·rmsDot3x8NEON(SB), NOSPLIT, $0-40")
	f.Instrs("MOVD a+0(FP), R1", "MOVD b+8(FP), R2", "MOVD c+16(FP), R4", "MOVD n+24(FP), R3",
		"MOVD acc+32(FP), R5", "VLD1 (R5), [V0.S4, V1.S4]")
	f.Arm64Loop("dot3", "R3", 8, func() {
		load8(f, 1, 2)
		load8(f, 2, 4)
		load8(f, 4, 6)
		for k := 0; k < 2; k++ {
			f.Vec3(asmgen.FMUL, 2+k, 2+k, 4+k)
			f.Vec3(asmgen.FMUL, 2+k, 2+k, 6+k)
			f.Vec3(asmgen.FADD, k, k, 2+k)
		}
	})
	f.Instrs("VST1 [V0.S4, V1.S4], (R5)", "RET")
	f.Linef("")
}

func rmsScale(f *asmgen.File) {
	f.Linef("// func rmsScale4NEON(out, x, w *float32, n int, s float32)")
	f.Linef("// out[i] = w[i]·(x[i]·s) for n (a multiple of 4) values.")
	f.Linef("TEXT ·rmsScale4NEON(SB), NOSPLIT, $0-36")
	f.Instrs("MOVD out+0(FP), R0", "MOVD x+8(FP), R1", "MOVD w+16(FP), R2", "MOVD n+24(FP), R3",
		"FMOVS s+32(FP), F16")
	f.Arm64Loop("scale", "R3", 4, func() {
		f.Instrs("VLD1.P 16(R1), [V0.S4]", "VLD1.P 16(R2), [V1.S4]")
		f.FMULElem(0, 0, 16, 0)
		f.Vec3(asmgen.FMUL, 0, 1, 0)
		f.Instr("VST1.P [V0.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

func rmsBwdApply(f *asmgen.File) {
	f.Linef("// func rmsBwdApply4NEON(dinp, dout, x, w *float32, n int, s, k float32)")
	f.Linef("// dinp[i] += (s·w[i])·dout[i] − x[i]·k for n (a multiple of 4) values.")
	f.Linef("TEXT ·rmsBwdApply4NEON(SB), NOSPLIT, $0-48")
	f.Instrs("MOVD dinp+0(FP), R0", "MOVD dout+8(FP), R2", "MOVD x+16(FP), R1", "MOVD w+24(FP), R4",
		"MOVD n+32(FP), R3", "FMOVS s+40(FP), F16", "FMOVS k+44(FP), F17")
	f.Arm64Loop("apply", "R3", 4, func() {
		f.Instrs("VLD1.P 16(R4), [V0.S4]", "VLD1.P 16(R2), [V1.S4]", "VLD1.P 16(R1), [V2.S4]", "VLD1 (R0), [V3.S4]")
		f.FMULElem(0, 0, 16, 0)
		f.Vec3(asmgen.FMUL, 0, 0, 1)
		f.FMULElem(2, 2, 17, 0)
		f.Vec3(asmgen.FSUB, 0, 0, 2)
		f.Vec3(asmgen.FADD, 3, 3, 0)
		f.Instr("VST1.P [V3.S4], 16(R0)")
	})
	f.Instr("RET")
	f.Linef("")
}

// rmsWeightCol writes the column kernel: 32 columns in V0..V7, a row's x in V16..V23 and its
// d in V24..V31.
func rmsWeightCol(f *asmgen.File) {
	f.Linef("// func rmsWeightCol32NEON(dw, d, x, rstd *float32, rows, stride int)")
	f.Linef("// For 32 columns: dw += d·(x·rstd[r]) over rows r (> 0) in order, rows stride floats apart.")
	f.Linef("TEXT ·rmsWeightCol32NEON(SB), NOSPLIT, $0-48")
	f.Instrs("MOVD dw+0(FP), R0", "MOVD d+8(FP), R2", "MOVD x+16(FP), R1", "MOVD rstd+24(FP), R4",
		"MOVD rows+32(FP), R3", "MOVD stride+40(FP), R5", "LSL $2, R5, R5",
		"VLD1 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]", "ADD $64, R0, R6", "VLD1 (R6), [V4.S4, V5.S4, V6.S4, V7.S4]")
	f.Arm64Loop("rmsw", "R3", 1, func() {
		f.Instrs("FMOVS.P 4(R4), F8", "MOVD R1, R7", "MOVD R2, R8",
			"VLD1.P 64(R7), [V16.S4, V17.S4, V18.S4, V19.S4]", "VLD1 (R7), [V20.S4, V21.S4, V22.S4, V23.S4]",
			"VLD1.P 64(R8), [V24.S4, V25.S4, V26.S4, V27.S4]", "VLD1 (R8), [V28.S4, V29.S4, V30.S4, V31.S4]")
		for k := 0; k < 8; k++ {
			f.FMULElem(16+k, 16+k, 8, 0)
			f.Vec3(asmgen.FMUL, 16+k, 24+k, 16+k)
			f.Vec3(asmgen.FADD, k, k, 16+k)
		}
		f.Instrs("ADD R5, R1, R1", "ADD R5, R2, R2")
	})
	f.Instrs("VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R0)", "VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R6)", "RET")
}

// lnCol writes LayerNorm's column kernel: 16 columns of dbias in V0..V3 and of dweight in
// V4..V7, a row's x in V16..V19 (becoming the norm, then norm·d) and d in V20..V23.
func lnCol(f *asmgen.File) {
	f.Linef("")
	f.Linef("// func lnCol16NEON(dw, db, x, d, mean, rstd *float32, rows, stride int)")
	f.Linef("// For 16 columns: db += d and dw += ((x-mean[r])·rstd[r])·d over rows r (> 0) in order.")
	f.Linef("TEXT ·lnCol16NEON(SB), NOSPLIT, $0-64")
	f.Instrs("MOVD dw+0(FP), R0", "MOVD db+8(FP), R6", "MOVD x+16(FP), R1", "MOVD d+24(FP), R2",
		"MOVD mean+32(FP), R4", "MOVD rstd+40(FP), R7", "MOVD rows+48(FP), R3", "MOVD stride+56(FP), R5",
		"LSL $2, R5, R5", "VLD1 (R6), [V0.S4, V1.S4, V2.S4, V3.S4]", "VLD1 (R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
	f.Arm64Loop("lncol", "R3", 1, func() {
		f.Instrs("FMOVS.P 4(R4), F24", "FMOVS.P 4(R7), F25", "VDUP V24.S[0], V24.S4",
			"VLD1 (R1), [V16.S4, V17.S4, V18.S4, V19.S4]", "VLD1 (R2), [V20.S4, V21.S4, V22.S4, V23.S4]")
		for k := 0; k < 4; k++ {
			f.Vec3(asmgen.FSUB, 16+k, 16+k, 24)
			f.FMULElem(16+k, 16+k, 25, 0)
			f.Vec3(asmgen.FADD, k, k, 20+k)
			f.Vec3(asmgen.FMUL, 16+k, 16+k, 20+k)
			f.Vec3(asmgen.FADD, 4+k, 4+k, 16+k)
		}
		f.Instrs("ADD R5, R1, R1", "ADD R5, R2, R2")
	})
	f.Instrs("VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R6)", "VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R0)", "RET")
}

func main() {
	asmgen.Main("norm_neon_gen.go", "norm_arm64.s", func(f *asmgen.File) {
		f.Linef("DATA lnc<>+0(SB)/4, $0x%08x // 1e-5", 0x3727c5ac)
		f.Linef("DATA lnc<>+4(SB)/4, $0x%08x // 1", 0x3f800000)
		f.Linef("GLOBL lnc<>(SB), RODATA|NOPTR, $8")
		f.Linef("")
		lnForward(f)
		lnBackward(f)
		rmsSumSquares(f)
		rmsDot3(f)
		rmsScale(f)
		rmsBwdApply(f)
		rmsWeightCol(f)
		lnCol(f)
	})
}
