//go:build ignore

// rope_neon_gen writes rope_arm64.s: the NEON RoPE kernels of rope_arm64.go, four pairs at a
// time with the products and sums of rope.go's ropeRotate and ropeRotateBack in their order,
// each rounded (no fused multiply-adds), so the bits agree with the portable loops and with
// the AVX2 kernels. Run with go generate; TestAssemblyUpToDate fails when rope_arm64.s
// differs from its output.
package main

import "github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"

// prologue loads the arguments: the first halves of the output (or dinp) and the input (or
// grad) in R0 and R1, their second halves, half floats on, in R6 and R7; cos, sin in R2, R4;
// n in R3.
func prologue(f *asmgen.File, out, in string) {
	f.Instrs("MOVD "+out+"+0(FP), R0", "MOVD "+in+"+8(FP), R1", "MOVD cos+16(FP), R2", "MOVD sin+24(FP), R4",
		"MOVD n+32(FP), R3", "MOVD half+40(FP), R5", "LSL $2, R5, R5", "ADD R5, R0, R6", "ADD R5, R1, R7")
	f.Linef("")
}

// loadPairs loads four pairs, a = in[i] into V0 and b = in[i+half] into V1, with cos[i] in V2
// and sin[i] in V3; then V4 = a·cos, V5 = b·sin, V6 = b·cos, V7 = a·sin.
func loadPairs(f *asmgen.File) {
	f.Instrs("VLD1.P 16(R1), [V0.S4]", "VLD1.P 16(R7), [V1.S4]", "VLD1.P 16(R2), [V2.S4]", "VLD1.P 16(R4), [V3.S4]")
	f.Vec3(asmgen.FMUL, 4, 0, 2)
	f.Vec3(asmgen.FMUL, 5, 1, 3)
	f.Vec3(asmgen.FMUL, 6, 1, 2)
	f.Vec3(asmgen.FMUL, 7, 0, 3)
}

func forward(f *asmgen.File) {
	f.Linef("// func rope4NEON(o, x, cos, sin *float32, n, half int)")
	f.Linef("// For i < n (a multiple of 4), with x0 = x[i], x1 = x[i+half]:")
	f.Linef("// o[i] = x0·cos[i] − x1·sin[i], o[i+half] = x1·cos[i] + x0·sin[i].")
	f.Linef("TEXT ·rope4NEON(SB), NOSPLIT, $0-48")
	prologue(f, "o", "x")
	f.Arm64Loop("ropef", "R3", 4, func() {
		loadPairs(f)
		f.Vec3(asmgen.FSUB, 4, 4, 5)
		f.Vec3(asmgen.FADD, 6, 6, 7)
		f.Instrs("VST1.P [V4.S4], 16(R0)", "VST1.P [V6.S4], 16(R6)")
	})
	f.Instr("RET")
	f.Linef("")
}

func backward(f *asmgen.File) {
	f.Linef("// func ropeBwd4NEON(dinp, grad, cos, sin *float32, n, half int)")
	f.Linef("// For i < n (a multiple of 4), with g0 = grad[i], g1 = grad[i+half]:")
	f.Linef("// dinp[i] += g0·cos[i] + g1·sin[i], dinp[i+half] += g1·cos[i] − g0·sin[i].")
	f.Linef("TEXT ·ropeBwd4NEON(SB), NOSPLIT, $0-48")
	prologue(f, "dinp", "grad")
	f.Arm64Loop("ropeb", "R3", 4, func() {
		loadPairs(f)
		f.Vec3(asmgen.FADD, 4, 4, 5)
		f.Vec3(asmgen.FSUB, 6, 6, 7)
		f.Instrs("VLD1 (R0), [V16.S4]", "VLD1 (R6), [V17.S4]")
		f.Vec3(asmgen.FADD, 16, 16, 4)
		f.Vec3(asmgen.FADD, 17, 17, 6)
		f.Instrs("VST1.P [V16.S4], 16(R0)", "VST1.P [V17.S4], 16(R6)")
	})
	f.Instr("RET")
}

func main() {
	asmgen.Main("rope_neon_gen.go", "rope_arm64.s", func(f *asmgen.File) {
		forward(f)
		backward(f)
	})
}
