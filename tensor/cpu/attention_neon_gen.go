//go:build ignore

// attention_neon_gen writes attention_arm64.s: the NEON versions of the attention kernels
// (attention.go's scores and combine). Each lane is one output and adds its terms in the
// portable loops' order with separate multiplies and adds (no fused multiply-adds), so the
// results equal theirs bit for bit whatever the blocking. Run with go generate;
// TestAssemblyUpToDate fails when attention_arm64.s differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// zero clears V(first)..V(first+n-1).
func zero(f *asmgen.File, first, n int) {
	for v := first; v < first+n; v++ {
		f.Instr("VEOR V%d.B16, V%d.B16, V%d.B16", v, v, v)
	}
}

// regs4 names V(first)..V(first+3) as a register list.
func regs4(first int) string {
	return fmt.Sprintf("[V%d.S4, V%d.S4, V%d.S4, V%d.S4]", first, first+1, first+2, first+3)
}

// mulAdd writes acc += a·(lane of b), the product rounded first, through temp t.
func mulAdd(f *asmgen.File, acc, a, b, lane, t int) {
	f.FMULElem(t, a, b, lane)
	f.Vec3(asmgen.FADD, acc, acc, t)
}

// scores4 writes attnScores4NEON: four query rows (q values four at a time in V20..V23)
// against one block of 16 keys (value i of each in V16..V19); sixteen sums in V0..V15.
func scores4(f *asmgen.File) {
	f.Linef("// func attnScores4NEON(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)")
	f.Linef("// Four query rows: s[r*ss+b*16+j] = sum over i of q[r*qs+i]*kt[(b*hs+i)*16+j], in order of i.")
	f.Linef("TEXT ·attnScores4NEON(SB), NOSPLIT, $0-56")
	f.Instrs("MOVD s+0(FP), R0", "MOVD ss+8(FP), R1", "LSL $2, R1, R1", "MOVD q+16(FP), R2", "MOVD qs+24(FP), R3",
		"LSL $2, R3, R3", "MOVD kt+32(FP), R11", "MOVD hs+40(FP), R8", "MOVD nblk+48(FP), R9",
		"ADD R3, R2, R4", "ADD R3, R4, R5", "ADD R3, R5, R6")
	f.Linef("")
	f.Arm64Loop("s4b", "R9", 1, func() {
		zero(f, 0, 16)
		f.Instrs("MOVD R2, R19", "MOVD R4, R20", "MOVD R5, R21", "MOVD R6, R22", "MOVD R8, R12")
		f.Arm64Loop("s4i", "R12", 4, func() {
			for r := 0; r < 4; r++ {
				f.Instr("VLD1.P 16(R%d), [V%d.S4]", 19+r, 20+r)
			}
			t := 0
			for ii := 0; ii < 4; ii++ {
				f.Instr("VLD1.P 64(R11), %s", regs4(16))
				for r := 0; r < 4; r++ {
					for k := 0; k < 4; k++ {
						mulAdd(f, 4*r+k, 16+k, 20+r, ii, 24+t%8)
						t++
					}
				}
			}
		})
		f.Instr("MOVD R0, R13")
		for r := 0; r < 4; r++ {
			f.Instr("VST1 %s, (R13)", regs4(4*r))
			if r < 3 {
				f.Instr("ADD R1, R13, R13")
			}
		}
		f.Instr("ADD $64, R0, R0")
	})
	f.Instr("RET")
	f.Linef("")
}

// scores1 writes attnScores1NEON: one query row (four values at a time in V20) against two
// blocks of keys at a time (V16..V19 and V8..V11), then one; sums in V0..V7.
func scores1(f *asmgen.File) {
	f.Linef("// func attnScores1NEON(s, q, kt *float32, hs, nblk int)")
	f.Linef("// One query row: s[b*16+j] = sum over i of q[i]*kt[(b*hs+i)*16+j], in order of i.")
	f.Linef("TEXT ·attnScores1NEON(SB), NOSPLIT, $0-40")
	f.Instrs("MOVD s+0(FP), R0", "MOVD q+8(FP), R2", "MOVD kt+16(FP), R7", "MOVD hs+24(FP), R8",
		"MOVD nblk+32(FP), R9", "LSL $6, R8, R10 // bytes per packed block")
	f.Linef("")
	for _, nb := range []int{2, 1} {
		lab := fmt.Sprintf("s1b%d", nb)
		f.Arm64Loop(lab, "R9", nb, func() {
			zero(f, 0, 4*nb)
			f.Instrs("MOVD R7, R11", "ADD R10, R7, R12", "MOVD R2, R19", "MOVD R8, R13")
			f.Arm64Loop(lab+"i", "R13", 4, func() {
				f.Instr("VLD1.P 16(R19), [V20.S4]")
				t := 0
				for ii := 0; ii < 4; ii++ {
					keys := []int{16, 8}[:nb]
					ptrs := []int{11, 12}[:nb]
					for b := range keys {
						f.Instr("VLD1.P 64(R%d), %s", ptrs[b], regs4(keys[b]))
					}
					for b, kr := range keys {
						for k := 0; k < 4; k++ {
							mulAdd(f, 4*b+k, kr+k, 20, ii, 24+t%8)
							t++
						}
					}
				}
			})
			for b := 0; b < nb; b++ {
				f.Instr("VST1.P %s, 64(R0)", regs4(4*b))
			}
			f.Instr("MOVD R%d, R7", 10+nb) // the last block's pointer has reached the next block
		})
	}
	f.Instr("RET")
	f.Linef("")
}

// combGroup writes one column group of a combine kernel: rows rows (out rows R1 bytes apart
// from R0, weight pointers wptrs advancing by R7 bytes) of 4·nv columns each, summed over the
// R10 rows of x (from R8, R9 bytes apart); acc (R12) says whether to start from out. Sums in
// V0.., a row of x in V16.. (at most three groups of four registers, reused in turn), the
// weights in V28.. (one per row).
func combGroup(f *asmgen.File, lab string, rows, nv int, wptrs []int) {
	cols := 4 * nv
	f.Arm64Loop(lab, "R11", cols, func() {
		f.Instr("CBZ R12, %sz", lab)
		outRows(f, rows, nv, "VLD1.P 64(R13), %s")
		f.Instr("B %sp", lab)
		f.Linef("%sz:", lab)
		zero(f, 0, rows*nv)
		f.Linef("%sp:", lab)
		f.Instrs(fmt.Sprintf("CBZ R10, %ss", lab), "MOVD R8, R13", "MOVD R10, R14")
		for r, p := range wptrs {
			f.Instr("MOVD R%d, R%d", p, 19+r)
		}
		f.Linef("%sj:", lab)
		for r := range wptrs {
			f.Instrs(fmt.Sprintf("FMOVS (R%d), F%d", 19+r, 28+r), fmt.Sprintf("ADD R7, R%d, R%d", 19+r, 19+r))
		}
		f.Instr("MOVD R13, R15")
		t := 0
		for g := 0; g < nv; g += 4 {
			xr := 16 + 4*((g/4)%3)
			f.Instr("VLD1.P 64(R15), %s", regs4(xr))
			for r := range wptrs {
				for k := 0; k < 4; k++ {
					if rows == 1 {
						// One row: the product goes back into x's register (read once).
						f.FMULElem(xr+k, xr+k, 28, 0)
						f.Vec3(asmgen.FADD, g+k, g+k, xr+k)
						continue
					}
					mulAdd(f, r*nv+g+k, xr+k, 28+r, 0, 24+t%4)
					t++
				}
			}
		}
		f.Instrs("ADD R9, R13, R13", "SUB $1, R14, R14", fmt.Sprintf("CBNZ R14, %sj", lab))
		f.Linef("%ss:", lab)
		outRows(f, rows, nv, "VST1.P %s, 64(R13)")
		f.Instrs(fmt.Sprintf("ADD $%d, R0, R0", 4*cols), fmt.Sprintf("ADD $%d, R8, R8", 4*cols))
	})
}

// outRows writes instr (a load or store through R13 with a register list) for each row's
// sums, the rows R1 bytes apart from R0 (R24 walks them).
func outRows(f *asmgen.File, rows, nv int, instr string) {
	f.Instr("MOVD R0, R24")
	for r := 0; r < rows; r++ {
		f.Instr("MOVD R24, R13")
		for g := 0; g < nv; g += 4 {
			f.Instr(instr, regs4(r*nv+g))
		}
		if r < rows-1 {
			f.Instr("ADD R1, R24, R24")
		}
	}
}

func comb(f *asmgen.File) {
	f.Linef("// func attnComb4NEON(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)")
	f.Linef("// Four rows: out[r*os+i] = (acc ? out[r*os+i] : 0) + sum over j < n of w[r*ws+j*wstep]*x[j*xs+i],")
	f.Linef("// in order of j, for i < hs (a multiple of 16).")
	f.Linef("TEXT ·attnComb4NEON(SB), NOSPLIT, $0-80")
	f.Instrs("MOVD out+0(FP), R0", "MOVD os+8(FP), R1", "LSL $2, R1, R1", "MOVD w+16(FP), R2", "MOVD ws+24(FP), R3",
		"LSL $2, R3, R3", "MOVD wstep+32(FP), R7", "LSL $2, R7, R7", "MOVD x+40(FP), R8", "MOVD xs+48(FP), R9",
		"LSL $2, R9, R9", "MOVD n+56(FP), R10", "MOVD hs+64(FP), R11", "MOVD acc+72(FP), R12",
		"ADD R3, R2, R4", "ADD R3, R4, R5", "ADD R3, R5, R6")
	f.Linef("")
	combGroup(f, "c4g16", 4, 4, []int{2, 4, 5, 6})
	f.Instr("RET")
	f.Linef("")
	f.Linef("// func attnComb1NEON(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)")
	f.Linef("// One row: out[i] = (acc ? out[i] : 0) + sum over j < n of w[j*wstep]*x[j*xs+i], in order of j.")
	f.Linef("TEXT ·attnComb1NEON(SB), NOSPLIT, $0-64")
	f.Instrs("MOVD out+0(FP), R0", "MOVD w+8(FP), R2", "MOVD wstep+16(FP), R7", "LSL $2, R7, R7", "MOVD x+24(FP), R8",
		"MOVD xs+32(FP), R9", "LSL $2, R9, R9", "MOVD n+40(FP), R10", "MOVD hs+48(FP), R11", "MOVD acc+56(FP), R12")
	f.Linef("")
	combGroup(f, "c1g64", 1, 16, []int{2})
	combGroup(f, "c1g16", 1, 4, []int{2})
	f.Instr("RET")
}

func main() {
	asmgen.Main("attention_neon_gen.go", "attention_arm64.s", func(f *asmgen.File) {
		scores4(f)
		scores1(f)
		comb(f)
	})
}
