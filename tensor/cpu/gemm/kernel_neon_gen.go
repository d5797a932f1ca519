//go:build ignore

// kernel_neon_gen writes kernel_arm64.s, the arm64 (NEON) counterpart of kernel_gen.go's
// micro-kernel, FMA peak loop and prefetch helper. Run with go generate; TestAssemblyUpToDate
// fails when kernel_arm64.s differs from its output.
package main

import (
	"strconv"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// NEON registers hold 4 float32 lanes; arm64 has 32 of them.
const lanes = 4

// kernel emits an mr x (nvec*4) micro-kernel with the contract of kernel_gen.go's: packed A
// strips of mr values per k step, a packed B panel of nr values per k step, C = alpha*acc +
// beta*C (C not read when beta is ±0), strips tiles down C, one prefetch-walk line per pair
// of k steps. Accumulators are V0..V(mr*nvec-1), row i in V(i*nvec)..; a k step loads
// mr/4 vectors of A and nvec of B and multiplies each B vector by each lane of A with
// FMLA by element, so A needs no broadcasts.
func kernel(f *asmgen.File, name string, mr, nvec int) {
	nr := nvec * lanes
	nacc := mr * nvec
	avec := mr / lanes
	areg := nacc        // A vectors
	breg := nacc + avec // B vectors
	if breg+nvec > 32 || mr%lanes != 0 {
		panic("kernel: the block does not fit 32 registers")
	}
	list := func(first, n int) string {
		s := "["
		for r := 0; r < n; r++ {
			if r > 0 {
				s += ", "
			}
			s += "V" + strconv.Itoa(first+r) + ".S4"
		}
		return s + "]"
	}
	f.Linef("// func %s(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)", name)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	f.Instr("MOVD strips+48(FP), R8")
	f.Instr("CBZ R8, done")
	f.Instr("MOVD k+0(FP), R0")
	f.Instr("MOVD a+8(FP), R1")
	f.Instr("MOVD c+24(FP), R4")
	f.Instr("MOVD ldc+32(FP), R5")
	f.Instr("LSL $2, R5, R5")
	// The walk lives in R9 (next line), R10 (lines left in the row), R11 (rows left) and R12
	// (row start); R13 points at the struct for the row length and stride.
	f.Instr("MOVD pf+56(FP), R13")
	f.Instr("MOVD 0(R13), R9")
	f.Instr("MOVD 8(R13), R10")
	f.Instr("MOVD 16(R13), R12")
	f.Instr("MOVD 24(R13), R11")
	f.Linef("strip:")
	f.Instr("MOVD b+16(FP), R2")
	// Start fetching the C tile now so the final update does not wait on it.
	f.Instr("MOVD R4, R6")
	for i := 0; i < mr; i++ {
		for l := 0; l < (4*nr+63)/64; l++ {
			f.Instr("PRFM %d(R6), PLDL1KEEP", 64*l)
		}
		if i < mr-1 {
			f.Instr("ADD R5, R6, R6")
		}
	}
	for i := 0; i < nacc; i++ {
		f.Instr("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	step := func() {
		f.Instr("VLD1.P %d(R1), %s", 4*mr, list(areg, avec))
		f.Instr("VLD1.P %d(R2), %s", 4*nr, list(breg, nvec))
		for i := 0; i < mr; i++ {
			for v := 0; v < nvec; v++ {
				f.FMLAElem(i*nvec+v, breg+v, areg+i/lanes, i%lanes)
			}
		}
	}
	f.Instr("LSR $1, R0, R3")
	f.Instr("CBZ R3, tail")
	f.Linef("loop:")
	step()
	f.Instr("CBZ R11, pfdone")
	f.Instr("PRFM (R9), PLDL2KEEP")
	f.Instr("ADD $64, R9, R9")
	f.Instr("SUBS $1, R10, R10")
	f.Instr("BNE pfdone")
	f.Instr("MOVD 40(R13), R14")
	f.Instr("ADD R14, R12, R12")
	f.Instr("MOVD R12, R9")
	f.Instr("MOVD 32(R13), R10")
	f.Instr("SUB $1, R11, R11")
	f.Linef("pfdone:")
	step()
	f.Instr("SUBS $1, R3, R3")
	f.Instr("BNE loop")
	f.Linef("tail:")
	f.Instr("TBZ $0, R0, scale")
	step()
	f.Linef("scale:")
	al, be := breg, breg+1 // the B registers are free now
	f.Instr("FMOVS alpha+40(FP), F%d", al)
	f.Instr("VDUP V%d.S[0], V%d.S4", al, al)
	for i := 0; i < nacc; i++ {
		f.FMULVec(i, i, al)
	}
	f.Instr("MOVWU beta+44(FP), R7")
	f.Instr("ANDW $0x7fffffff, R7, R7")
	f.Instr("CBZW R7, store")
	f.Instr("FMOVS beta+44(FP), F%d", be)
	f.Instr("VDUP V%d.S[0], V%d.S4", be, be)
	f.Instr("MOVD R4, R6")
	// Each row of C is loaded into the registers above beta's.
	for i := 0; i < mr; i++ {
		f.Instr("VLD1 (R6), %s", list(be+1, nvec))
		for v := 0; v < nvec; v++ {
			f.Instr("VFMLA V%d.S4, V%d.S4, V%d.S4", be, be+1+v, i*nvec+v)
		}
		if i < mr-1 {
			f.Instr("ADD R5, R6, R6")
		}
	}
	f.Linef("store:")
	for i := 0; i < mr; i++ {
		f.Instr("VST1 %s, (R4)", list(i*nvec, nvec))
		f.Instr("ADD R5, R4, R4")
	}
	f.Instr("SUBS $1, R8, R8")
	f.Instr("BNE strip")
	f.Instr("MOVD R9, 0(R13)")
	f.Instr("MOVD R10, 8(R13)")
	f.Instr("MOVD R12, 16(R13)")
	f.Instr("MOVD R11, 24(R13)")
	f.Linef("done:")
	f.Instr("RET")
	f.Linef("")
}

// peak emits a loop of 24 independent vector FMAs per iteration: enough in flight to fill
// four FMA pipes of four-cycle latency.
func peak(f *asmgen.File, name string) {
	f.Linef("// func %s(n int)", name)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	f.Instr("MOVD n+0(FP), R0")
	for i := 0; i < 26; i++ {
		f.Instr("VEOR V%d.B16, V%d.B16, V%d.B16", i, i, i)
	}
	f.Instr("CBZ R0, pdone")
	f.Linef("ploop:")
	for i := 0; i < 24; i++ {
		f.Instr("VFMLA V24.S4, V25.S4, V%d.S4", i)
	}
	f.Instr("SUBS $1, R0, R0")
	f.Instr("BNE ploop")
	f.Linef("pdone:")
	f.Instr("RET")
	f.Linef("")
}

// prefetchRows emits a loop that asks for rows of a strided matrix to be brought into L2.
func prefetchRows(f *asmgen.File) {
	f.Linef("// func prefetchRows(src uintptr, stride uintptr, rows int, lines int)")
	f.Linef("// Prefetches lines cache lines from the start of each of rows rows stride bytes apart.")
	f.Linef("TEXT ·prefetchRows(SB), NOSPLIT, $0-32")
	f.Instr("MOVD src+0(FP), R0")
	f.Instr("MOVD stride+8(FP), R1")
	f.Instr("MOVD rows+16(FP), R2")
	f.Instr("MOVD lines+24(FP), R3")
	f.Instr("CBZ R2, pdone")
	f.Instr("CBZ R3, pdone")
	f.Linef("prow:")
	f.Instr("MOVD R0, R4")
	f.Instr("MOVD R3, R5")
	f.Linef("pline:")
	f.Instr("PRFM (R4), PLDL2KEEP")
	f.Instr("ADD $64, R4, R4")
	f.Instr("SUBS $1, R5, R5")
	f.Instr("BNE pline")
	f.Instr("ADD R1, R0, R0")
	f.Instr("SUBS $1, R2, R2")
	f.Instr("BNE prow")
	f.Linef("pdone:")
	f.Instr("RET")
	f.Linef("")
}

func main() {
	asmgen.Main("kernel_neon_gen.go", "kernel_arm64.s", func(f *asmgen.File) {
		// 8 rows x 3 vectors of 4 = 24 accumulators, 2 A vectors, 3 B vectors: 29 of 32.
		kernel(f, "kern8x12neon", 8, 3)
		peak(f, "fmaLoopNEON")
		prefetchRows(f)
	})
}
