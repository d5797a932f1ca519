//go:build ignore

// adamw_neon_gen writes adamw_arm64.s: adamwNEON, the AdamW update of adamw.go four parameters
// at a time with the operations of adamScalar in its order, each rounded (no fused
// multiply-adds), so that it gives adamScalar's bits. Run with go generate;
// TestAssemblyUpToDate fails when adamw_arm64.s differs from its output.
package main

import "github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"

// The constants of c: gs, b1, 1-b1, b2 in V20; 1-b2, c1, c2, eps in V21; wd, lr in V22
// (read by multiplies by element), and c1, c2, eps repeated over V24, V25, V26 for the
// divisions and the add.
const vC0, vC1, vC2, vC1s, vC2s, vEps = 20, 21, 22, 24, 25, 26

func adamw(f *asmgen.File) {
	f.Linef("// func adamwNEON(p, grad, m, v *float32, n int, c *[10]float32)")
	f.Linef("// llm.c's AdamW on n (a multiple of 4) parameters, as adamScalar: c holds gs, b1, 1-b1,")
	f.Linef("// b2, 1-b2, c1, c2, eps, wd, lr.")
	f.Linef("TEXT ·adamwNEON(SB), NOSPLIT, $0-48")
	f.Instrs("MOVD p+0(FP), R0", "MOVD grad+8(FP), R1", "MOVD m+16(FP), R2", "MOVD v+24(FP), R4",
		"MOVD n+32(FP), R3", "MOVD c+40(FP), R5")
	// c is 40 bytes: two whole registers, then the last two values by a 64-bit load.
	f.Instr("VLD1 (R5), [V%d.S4, V%d.S4]", vC0, vC1)
	f.Instr("FMOVD 32(R5), F%d", vC2)
	f.Instrs("VDUP V21.S[1], V24.S4", "VDUP V21.S[2], V25.S4", "VDUP V21.S[3], V26.S4")
	f.Linef("")
	f.Arm64Loop("adam", "R3", 4, func() {
		f.Instr("VLD1.P 16(R1), [V0.S4]")
		f.FMULElem(0, 0, vC0, 0) // grad = g*gs
		f.Instr("VLD1 (R2), [V1.S4]")
		f.FMULElem(1, 1, vC0, 1) // b1*m
		f.FMULElem(2, 0, vC0, 2) // (1-b1)*grad
		f.Vec3(asmgen.FADD, 1, 1, 2)
		f.Instr("VLD1 (R4), [V3.S4]")
		f.FMULElem(3, 3, vC0, 3) // b2*v
		f.FMULElem(4, 0, vC1, 0) // (1-b2)*grad
		f.Vec3(asmgen.FMUL, 4, 4, 0)
		f.Vec3(asmgen.FADD, 3, 3, 4)
		f.Instrs("VST1.P [V1.S4], 16(R2)", "VST1.P [V3.S4], 16(R4)")
		f.Vec3(asmgen.FDIV, 5, 1, vC1s) // mhat
		f.Vec3(asmgen.FDIV, 6, 3, vC2s) // vhat
		f.Vec2(asmgen.FSQRT, 6, 6)
		f.Vec3(asmgen.FADD, 6, 6, vEps)
		f.Vec3(asmgen.FDIV, 5, 5, 6)
		f.Instr("VLD1 (R0), [V7.S4]")
		f.FMULElem(8, 7, vC2, 0) // wd*param
		f.Vec3(asmgen.FADD, 5, 5, 8)
		f.FMULElem(5, 5, vC2, 1) // lr*(...)
		f.Vec3(asmgen.FSUB, 7, 7, 5)
		f.Instr("VST1.P [V7.S4], 16(R0)")
	})
	f.Instr("RET")
}

func main() {
	asmgen.Main("adamw_neon_gen.go", "adamw_arm64.s", adamw)
}
