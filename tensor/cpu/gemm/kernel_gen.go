//go:build ignore

// kernel_gen writes kernel_amd64.s: the micro-kernels, packing helpers and FMA peak loops are
// long runs of the same instruction over different registers, generated here rather than
// written out by hand. Run with go generate; TestAssemblyUpToDate fails when kernel_amd64.s
// differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// rowAddr addresses row i of a strip whose rows are R9 bytes apart: rows 0-2 from R8, 3-5
// from R10 = R8+3*R9, 6-7 from R11 = R8+6*R9 (x86 scales stop at 8).
func rowAddr(i int) string {
	base := []string{"R8", "R10", "R11"}[i/3]
	return fmt.Sprintf([]string{"(%s)", "(%s)(R9*1)", "(%s)(R9*2)"}[i%3], base)
}

// kernel emits an mr x (nvec*vw) micro-kernel on the registers of s, vw floats each,
// run over strips consecutive strips of packed A and tiles of C. The k loop is unrolled
// twice; an odd k finishes with one more step. Between the two steps of each pair it
// requests one cache line of its prefetch walk (see prefetchWalk), so the next operands
// stream in under the multiply-adds instead of in bursts between kernel calls.
func kernel(f *asmgen.File, name string, mr, nvec int, s asmgen.Vec) {
	kernelStrided(f, name, mr, mr, nvec, s)
}

// kernelStrided is kernel for the first mr rows of strips packed astride rows deep: the
// edge kernel that computes a strip's valid rows in place.
func kernelStrided(f *asmgen.File, name string, mr, astride, nvec int, s asmgen.Vec) {
	reg, vw := s.Reg, s.Lanes
	nr := nvec * vw
	nacc := mr * nvec
	f.Linef("// func %s(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)", name)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	f.Instr("MOVQ strips+48(FP), AX")
	f.Instr("TESTQ AX, AX")
	f.Instr("JZ done")
	f.Instr("MOVQ a+8(FP), R8")
	f.Instr("MOVQ c+24(FP), DI")
	f.Instr("MOVQ ldc+32(FP), DX")
	f.Instr("SHLQ $2, DX")
	// The walk lives in R9 (next line), R10 (lines left in the row), R11 (rows left) and R12
	// (row start); R13 points at the struct for the row length and stride.
	f.Instr("MOVQ pf+56(FP), R13")
	f.Instr("MOVQ 0(R13), R9")
	f.Instr("MOVQ 8(R13), R10")
	f.Instr("MOVQ 16(R13), R12")
	f.Instr("MOVQ 24(R13), R11")
	f.Linef("strip:")
	f.Instr("MOVQ k+0(FP), CX")
	f.Instr("MOVQ b+16(FP), SI")
	// Start fetching the C tile now so the final update does not wait on it.
	f.Instr("MOVQ DI, BX")
	for i := 0; i < mr; i++ {
		for l := 0; l < (4*nr+63)/64; l++ {
			f.Instr("PREFETCHT0 %d(BX)", 64*l)
		}
		if i < mr-1 {
			f.Instr("ADDQ DX, BX")
		}
	}
	for i := 0; i < nacc; i++ {
		f.Instr("VXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
	}
	breg := func(v int) int { return nacc + v }
	bc := []int{nacc + nvec, nacc + nvec + 1} // broadcast registers, alternated
	step := func(u int) {
		for v := 0; v < nvec; v++ {
			f.Instr("VMOVUPS %d(SI), %s%d", 4*nr*u+4*vw*v, reg, breg(v))
		}
		for i := 0; i < mr; i++ {
			r := bc[i%2]
			f.Instr("VBROADCASTSS %d(R8), %s%d", 4*astride*u+4*i, reg, r)
			for v := 0; v < nvec; v++ {
				f.Instr("VFMADD231PS %s%d, %s%d, %s%d", reg, breg(v), reg, r, reg, i*nvec+v)
			}
		}
	}
	f.Instr("MOVQ CX, AX")
	f.Instr("SHRQ $1, CX")
	f.Instr("JZ tail")
	f.Linef("loop:")
	step(0)
	f.Instr("TESTQ R11, R11")
	f.Instr("JZ pfdone")
	f.Instr("PREFETCHT1 (R9)")
	f.Instr("ADDQ $64, R9")
	f.Instr("DECQ R10")
	f.Instr("JNZ pfdone")
	f.Instr("ADDQ 40(R13), R12")
	f.Instr("MOVQ R12, R9")
	f.Instr("MOVQ 32(R13), R10")
	f.Instr("DECQ R11")
	f.Linef("pfdone:")
	step(1)
	f.Instr("ADDQ $%d, SI", 8*nr)
	f.Instr("ADDQ $%d, R8", 8*astride)
	f.Instr("DECQ CX")
	f.Instr("JNZ loop")
	f.Linef("tail:")
	f.Instr("TESTQ $1, AX")
	f.Instr("JZ scale")
	step(0)
	f.Instr("ADDQ $%d, R8", 4*astride)
	f.Linef("scale:")
	al, be := nacc+nvec, nacc+nvec+1
	f.Instr("VBROADCASTSS alpha+40(FP), %s%d", reg, al)
	for i := 0; i < nacc; i++ {
		f.Instr("VMULPS %s%d, %s%d, %s%d", reg, al, reg, i, reg, i)
	}
	f.Instr("MOVL beta+44(FP), AX")
	f.Instr("ANDL $0x7fffffff, AX")
	f.Instr("JZ store")
	f.Instr("VBROADCASTSS beta+44(FP), %s%d", reg, be)
	f.Instr("MOVQ DI, BX")
	for i := 0; i < mr; i++ {
		for v := 0; v < nvec; v++ {
			f.Instr("VFMADD231PS %d(BX), %s%d, %s%d", 4*vw*v, reg, be, reg, i*nvec+v)
		}
		if i < mr-1 {
			f.Instr("ADDQ DX, BX")
		}
	}
	f.Linef("store:")
	for i := 0; i < mr; i++ {
		for v := 0; v < nvec; v++ {
			f.Instr("VMOVUPS %s%d, %d(DI)", reg, i*nvec+v, 4*vw*v)
		}
		f.Instr("ADDQ DX, DI")
	}
	f.Instr("DECQ strips+48(FP)")
	f.Instr("JNZ strip")
	f.Instr("MOVQ R9, 0(R13)")
	f.Instr("MOVQ R10, 8(R13)")
	f.Instr("MOVQ R12, 16(R13)")
	f.Instr("MOVQ R11, 24(R13)")
	f.Instr("VZEROUPPER")
	f.Linef("done:")
	f.Instr("RET")
	f.Linef("")
}

// transpose8 emits the 8x8 block transpose used to pack transposed operands.
func transpose8(f *asmgen.File) {
	f.Linef("// func transpose8(dst *float32, dstStride int, src *float32, srcStride int, nblk int)")
	f.Linef("// Block b reads src rows r=0..7 at src[r*srcStride + 8b : +8] and writes column t of the")
	f.Linef("// block to dst[(8b+t)*dstStride : +8].")
	f.Linef("TEXT ·transpose8(SB), NOSPLIT, $0-40")
	f.Instr("MOVQ dst+0(FP), DI")
	f.Instr("MOVQ dstStride+8(FP), DX")
	f.Instr("MOVQ src+16(FP), R8")
	f.Instr("MOVQ srcStride+24(FP), R9")
	f.Instr("MOVQ nblk+32(FP), CX")
	f.Instr("SHLQ $2, DX")
	f.Instr("SHLQ $2, R9")
	f.Instr("LEAQ (R8)(R9*2), R10")
	f.Instr("ADDQ R9, R10")
	f.Instr("LEAQ (R10)(R9*2), R11")
	f.Instr("ADDQ R9, R11")
	f.Instr("LEAQ (DX)(DX*2), R13")
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ done")
	f.Linef("tloop:")
	for i := 0; i < 8; i++ {
		f.Instr("VMOVUPS %s, Y%d", rowAddr(i), i)
	}
	transposeRegs(f)
	f.Instr("MOVQ DI, BX")
	for t := 0; t < 8; t++ {
		if t == 4 {
			f.Instr("LEAQ (BX)(DX*4), BX")
		}
		addr := []string{"(BX)", "(BX)(DX*1)", "(BX)(DX*2)", "(BX)(R13*1)"}[t%4]
		f.Instr("VMOVUPS Y%d, %s", 8+t, addr)
	}
	f.Instr("LEAQ (DI)(DX*8), DI")
	f.Instr("ADDQ $32, R8")
	f.Instr("ADDQ $32, R10")
	f.Instr("ADDQ $32, R11")
	f.Instr("DECQ CX")
	f.Instr("JNZ tloop")
	f.Linef("done:")
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// transposeRegs emits the transpose of the 8x8 block in Y0-Y7 (row r in Yr) into Y8-Y15
// (column t in Y8+t).
func transposeRegs(f *asmgen.File) {
	// Interleave row pairs, then pairs of pairs, then swap 128-bit halves.
	for p := 0; p < 4; p++ {
		a, b := 2*p, 2*p+1
		f.Instr("VUNPCKLPS Y%d, Y%d, Y%d", b, a, 8+2*p)
		f.Instr("VUNPCKHPS Y%d, Y%d, Y%d", b, a, 9+2*p)
	}
	spec := [][3]int{{8, 10, 0x44}, {8, 10, 0xEE}, {9, 11, 0x44}, {9, 11, 0xEE},
		{12, 14, 0x44}, {12, 14, 0xEE}, {13, 15, 0x44}, {13, 15, 0xEE}}
	for s, sp := range spec {
		f.Instr("VSHUFPS $0x%02X, Y%d, Y%d, Y%d", sp[2], sp[1], sp[0], s)
	}
	for t := 0; t < 8; t++ {
		imm := 0x20
		if t >= 4 {
			imm = 0x31
		}
		f.Instr("VPERM2F128 $0x%02X, Y%d, Y%d, Y%d", imm, t%4+4, t%4, 8+t)
	}
}

// transpose6 emits the packing of a 6-row strip of an operand stored by rows (the AVX2
// kernel's strip of A): 8x8 transposes whose rows 6 and 7 are zeros, each column stored as
// 8 values 6 apart, so the next column's store overwrites the two zeros; the block's last
// column stores its 6 values alone, so nothing is written past the strip.
func transpose6(f *asmgen.File) {
	f.Linef("// func transpose6(dst *float32, src *float32, srcStride int, nblk int)")
	f.Linef("// Block b reads src rows r=0..5 at src[r*srcStride + 8b : +8] and writes column t of the")
	f.Linef("// block to dst[(8b+t)*6 : +6].")
	f.Linef("TEXT ·transpose6(SB), NOSPLIT, $0-32")
	f.Instr("MOVQ dst+0(FP), DI")
	f.Instr("MOVQ src+8(FP), R8")
	f.Instr("MOVQ srcStride+16(FP), R9")
	f.Instr("MOVQ nblk+24(FP), CX")
	f.Instr("SHLQ $2, R9")
	f.Instr("LEAQ (R8)(R9*2), R10")
	f.Instr("ADDQ R9, R10")
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ done")
	f.Linef("t6loop:")
	for i := 0; i < 6; i++ {
		f.Instr("VMOVUPS %s, Y%d", rowAddr(i), i)
	}
	f.Instr("VXORPS Y6, Y6, Y6")
	f.Instr("VXORPS Y7, Y7, Y7")
	transposeRegs(f)
	for t := 0; t < 7; t++ {
		f.Instr("VMOVUPS Y%d, %d(DI)", 8+t, 24*t)
	}
	f.Instr("VMOVUPS X15, 168(DI)")
	f.Instr("VEXTRACTF128 $1, Y15, X15")
	f.Instr("VMOVQ X15, 184(DI)")
	f.Instr("ADDQ $192, DI")
	f.Instr("ADDQ $32, R8")
	f.Instr("ADDQ $32, R10")
	f.Instr("DECQ CX")
	f.Instr("JNZ t6loop")
	f.Linef("done:")
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// copyRows6 emits a copy of n rows of 6 floats from a strided source to a contiguous
// destination: packing a 6-row strip of a transposed operand.
func copyRows6(f *asmgen.File) {
	f.Linef("// func copyRows6(dst *float32, src *float32, srcStride int, n int)")
	f.Linef("// Copies n rows of 6 floats from src + i*srcStride to dst + 6i.")
	f.Linef("TEXT ·copyRows6(SB), NOSPLIT, $0-32")
	f.Instr("MOVQ dst+0(FP), DI")
	f.Instr("MOVQ src+8(FP), SI")
	f.Instr("MOVQ srcStride+16(FP), DX")
	f.Instr("MOVQ n+24(FP), CX")
	f.Instr("SHLQ $2, DX")
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ c6done")
	f.Linef("c6loop:")
	f.Instr("VMOVUPS (SI), X0")
	f.Instr("MOVQ 16(SI), AX")
	f.Instr("VMOVUPS X0, (DI)")
	f.Instr("MOVQ AX, 16(DI)")
	f.Instr("ADDQ DX, SI")
	f.Instr("ADDQ $24, DI")
	f.Instr("DECQ CX")
	f.Instr("JNZ c6loop")
	f.Linef("c6done:")
	f.Instr("RET")
	f.Linef("")
}

// peak emits a loop of 12 independent FMAs per iteration on the registers of s.
func peak(f *asmgen.File, name string, s asmgen.Vec) {
	reg := s.Reg
	f.Linef("// func %s(n int)", name)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	f.Instr("MOVQ n+0(FP), CX")
	for i := 0; i < 14; i++ {
		f.Instr("VXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
	}
	f.Linef("ploop:")
	for i := 0; i < 12; i++ {
		f.Instr("VFMADD231PS %s12, %s13, %s%d", reg, reg, reg, i)
	}
	f.Instr("DECQ CX")
	f.Instr("JNZ ploop")
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// copyRows emits a copy of n rows of nvec vectors (registers of s, vw floats each) from a
// strided source to a contiguous destination: packing a panel of B that is not transposed.
func copyRows(f *asmgen.File, name string, nvec int, s asmgen.Vec) {
	reg, vw := s.Reg, s.Lanes
	width := nvec * vw
	f.Linef("// func %s(dst *float32, src *float32, srcStride int, n int)", name)
	f.Linef("// Copies n rows of %d floats from src + i*srcStride to dst + %di.", width, width)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	f.Instr("MOVQ dst+0(FP), DI")
	f.Instr("MOVQ src+8(FP), SI")
	f.Instr("MOVQ srcStride+16(FP), DX")
	f.Instr("MOVQ n+24(FP), CX")
	f.Instr("SHLQ $2, DX")
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ cdone")
	f.Linef("cloop:")
	for v := 0; v < nvec; v++ {
		f.Instr("VMOVUPS %d(SI), %s%d", 4*vw*v, reg, v)
	}
	for v := 0; v < nvec; v++ {
		f.Instr("VMOVUPS %s%d, %d(DI)", reg, v, 4*vw*v)
	}
	f.Instr("ADDQ DX, SI")
	f.Instr("ADDQ $%d, DI", 4*width)
	f.Instr("DECQ CX")
	f.Instr("JNZ cloop")
	f.Linef("cdone:")
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// prefetchRows emits a loop that asks for rows of a strided matrix to be brought into L2.
func prefetchRows(f *asmgen.File) {
	f.Linef("// func prefetchRows(src uintptr, stride uintptr, rows int, lines int)")
	f.Linef("// Prefetches lines cache lines from the start of each of rows rows stride bytes apart.")
	f.Linef("TEXT ·prefetchRows(SB), NOSPLIT, $0-32")
	f.Instr("MOVQ src+0(FP), SI")
	f.Instr("MOVQ stride+8(FP), DX")
	f.Instr("MOVQ rows+16(FP), CX")
	f.Instr("MOVQ lines+24(FP), R8")
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ pdone")
	f.Instr("TESTQ R8, R8")
	f.Instr("JZ pdone")
	f.Linef("prow:")
	f.Instr("MOVQ SI, AX")
	f.Instr("MOVQ R8, BX")
	f.Linef("pline:")
	f.Instr("PREFETCHT1 (AX)")
	f.Instr("ADDQ $64, AX")
	f.Instr("DECQ BX")
	f.Instr("JNZ pline")
	f.Instr("ADDQ DX, SI")
	f.Instr("DECQ CX")
	f.Instr("JNZ prow")
	f.Linef("pdone:")
	f.Instr("RET")
	f.Linef("")
}

// dotB is how a dot-product kernel reads B: float32 rows, or bfloat16 rows (the bits of
// tensor.RoundBfloat16's results, halved) widened to float32 in registers. The widening is
// exact, so the two kernels give the same bits for B rounded to bfloat16 beforehand.
type dotB struct {
	suffix string // of the kernel's name
	elem   string // Go type of B's elements
	shift  int    // log2 of an element's bytes
	bf16   bool
	// prefetchNext has every iteration ask for the next four rows of B (the next call's) at
	// the columns it reads. Widening takes more instructions per byte than a float32 load, so
	// the out-of-order window covers fewer bytes of B and fewer cache misses overlap:
	// streaming halves from memory needs the requests made explicitly to outrun float32.
	prefetchNext bool
}

var (
	dotF32  = dotB{elem: "float32", shift: 2}
	dotBF16 = dotB{suffix: "bf16", elem: "uint16", shift: 1, bf16: true, prefetchNext: true}
)

// prefetchSetup points R13 at B's row 5 (R12 is row 3) for prefetchB.
func (d dotB) prefetchSetup(f *asmgen.File) {
	if d.prefetchNext {
		f.Instr("LEAQ (R12)(DX*2), R13")
	}
}

// prefetchB emits the requests for rows 4-7 of B at the current columns. They are addresses
// only: past B's end they fault nowhere.
func (d dotB) prefetchB(f *asmgen.File) {
	if !d.prefetchNext {
		return
	}
	for _, addr := range []string{"(R12)(DX*1)", "(R13)", "(R13)(DX*1)", "(R13)(DX*2)"} {
		f.Instr("PREFETCHT0 %s", addr)
	}
}

// advance emits the step of B's row pointers by n bytes.
func (d dotB) advance(f *asmgen.File, n int) {
	regs := []string{"SI", "R12"}
	if d.prefetchNext {
		regs = append(regs, "R13")
	}
	for _, reg := range regs {
		f.Instr("ADDQ $%d, %s", n, reg)
	}
}

// load emits the load of one vector of B (lanes values, reg the register's prefix) at addr.
func (d dotB) load(f *asmgen.File, addr, reg string, r int) {
	if !d.bf16 {
		f.Instr("VMOVUPS %s, %s%d", addr, reg, r)
		return
	}
	f.Instr("VPMOVZXWD %s, %s%d", addr, reg, r)
	f.Instr("VPSLLD $16, %s%d, %s%d", reg, r, reg, r)
}

// dot4x4 emits the AVX-512 4x4 dot-product kernel: 16 accumulators Z0-Z15, A rows in
// Z16-Z19, B rows in Z20-Z23, then a horizontal sum of each accumulator.
func dot4x4(f *asmgen.File, bt dotB) {
	name := "dot4x4avx512" + bt.suffix
	f.Linef("// func %s(k16 int, a0, a1, a2, a3 *float32, b *%s, ldb int, out *float32)", name, bt.elem)
	f.Linef("// out[4i+j] = sum over p < k16 (a multiple of 16) of ai[p] * b[j*ldb + p], i, j < 4.")
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	f.Instr("MOVQ k16+0(FP), CX")
	f.Instr("MOVQ a0+8(FP), R8")
	f.Instr("MOVQ a1+16(FP), R9")
	f.Instr("MOVQ a2+24(FP), R10")
	f.Instr("MOVQ a3+32(FP), R11")
	f.Instr("MOVQ b+40(FP), SI")
	f.Instr("MOVQ ldb+48(FP), DX")
	f.Instr("MOVQ out+56(FP), DI")
	f.Instr("SHLQ $%d, DX", bt.shift)
	f.Instr("LEAQ (SI)(DX*2), R12")
	f.Instr("ADDQ DX, R12")
	bt.prefetchSetup(f)
	f.Instr("SHRQ $4, CX")
	for r := 0; r < 16; r++ {
		f.Instr("VXORPS Z%d, Z%d, Z%d", r, r, r)
	}
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ reduce")
	f.Linef("dloop:")
	for i, reg := range []string{"R8", "R9", "R10", "R11"} {
		f.Instr("VMOVUPS (%s), Z%d", reg, 16+i)
	}
	for j, addr := range []string{"(SI)", "(SI)(DX*1)", "(SI)(DX*2)", "(R12)"} {
		bt.load(f, addr, "Z", 20+j)
	}
	bt.prefetchB(f)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			f.Instr("VFMADD231PS Z%d, Z%d, Z%d", 20+j, 16+i, 4*i+j)
		}
	}
	for _, reg := range []string{"R8", "R9", "R10", "R11"} {
		f.Instr("ADDQ $64, %s", reg)
	}
	bt.advance(f, 16<<bt.shift)
	f.Instr("DECQ CX")
	f.Instr("JNZ dloop")
	f.Linef("reduce:")
	// Fold 512 -> 256 -> 128 -> 64 -> 32 bits: every lane ends holding the total.
	for r := 0; r < 16; r++ {
		t := 24 + r%8
		f.Instr("VSHUFF32X4 $0x4E, Z%d, Z%d, Z%d", r, r, t)
		f.Instr("VADDPS Z%d, Z%d, Z%d", t, r, r)
		f.Instr("VSHUFF32X4 $0xB1, Z%d, Z%d, Z%d", r, r, t)
		f.Instr("VADDPS Z%d, Z%d, Z%d", t, r, r)
		f.Instr("VPERMILPS $0x4E, Z%d, Z%d", r, t)
		f.Instr("VADDPS Z%d, Z%d, Z%d", t, r, r)
		f.Instr("VPERMILPS $0xB1, Z%d, Z%d", r, t)
		f.Instr("VADDPS Z%d, Z%d, Z%d", t, r, r)
		f.Instr("VMOVSS X%d, %d(DI)", r, 4*r)
	}
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// dot2x4 emits the AVX2 dot-product kernel for two rows of A and four of B: 8 accumulators
// Y0-Y7, A rows in Y8-Y9, B rows in Y10-Y13 (AVX2's 16 registers hold no 4x4 block), then a
// horizontal sum of each accumulator.
func dot2x4(f *asmgen.File, bt dotB) {
	name := "dot2x4avx2" + bt.suffix
	f.Linef("// func %s(k16 int, a0, a1, a2, a3 *float32, b *%s, ldb int, out *float32)", name, bt.elem)
	f.Linef("// out[4i+j] = sum over p < k16 (a multiple of 16) of ai[p] * b[j*ldb + p], i < 2, j < 4;")
	f.Linef("// a2 and a3 are not read.")
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	f.Instr("MOVQ k16+0(FP), CX")
	f.Instr("MOVQ a0+8(FP), R8")
	f.Instr("MOVQ a1+16(FP), R9")
	f.Instr("MOVQ b+40(FP), SI")
	f.Instr("MOVQ ldb+48(FP), DX")
	f.Instr("MOVQ out+56(FP), DI")
	f.Instr("SHLQ $%d, DX", bt.shift)
	f.Instr("LEAQ (SI)(DX*2), R12")
	f.Instr("ADDQ DX, R12")
	bt.prefetchSetup(f)
	f.Instr("SHRQ $3, CX")
	for r := 0; r < 8; r++ {
		f.Instr("VXORPS Y%d, Y%d, Y%d", r, r, r)
	}
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ reduce2")
	f.Linef("dloop2:")
	for i, reg := range []string{"R8", "R9"} {
		f.Instr("VMOVUPS (%s), Y%d", reg, 8+i)
	}
	for j, addr := range []string{"(SI)", "(SI)(DX*1)", "(SI)(DX*2)", "(R12)"} {
		bt.load(f, addr, "Y", 10+j)
	}
	bt.prefetchB(f)
	for i := 0; i < 2; i++ {
		for j := 0; j < 4; j++ {
			f.Instr("VFMADD231PS Y%d, Y%d, Y%d", 10+j, 8+i, 4*i+j)
		}
	}
	for _, reg := range []string{"R8", "R9"} {
		f.Instr("ADDQ $32, %s", reg)
	}
	bt.advance(f, 8<<bt.shift)
	f.Instr("DECQ CX")
	f.Instr("JNZ dloop2")
	f.Linef("reduce2:")
	// Fold 256 -> 128 -> 64 -> 32 bits.
	for r := 0; r < 8; r++ {
		f.Instr("VEXTRACTF128 $1, Y%d, X14", r)
		f.Instr("VADDPS X14, X%d, X%d", r, r)
		f.Instr("VPERMILPS $0x4E, X%d, X14", r)
		f.Instr("VADDPS X14, X%d, X%d", r, r)
		f.Instr("VPERMILPS $0xB1, X%d, X14", r)
		f.Instr("VADDPS X14, X%d, X%d", r, r)
		f.Instr("VMOVSS X%d, %d(DI)", r, 4*r)
	}
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// roundConst broadcasts a 32-bit constant into every lane of Y register y.
func roundConst(f *asmgen.File, y int, v uint32) {
	f.Instr("MOVL $0x%08x, AX", v)
	f.Instr("MOVQ AX, X%d", y)
	f.Instr("VPBROADCASTD X%d, Y%d", y, y)
}

// roundLoop emits a function that rounds n floats (a multiple of 8) in place, 8 at a time:
// body turns the values in Y0 into their rounded values in Y2.
func roundLoop(f *asmgen.File, name, doc string, consts map[int]uint32, body func()) {
	f.Linef("// func %s(s *float32, n int)", name)
	f.Linef("// %s", doc)
	f.Linef("TEXT ·%s(SB), NOSPLIT, $0-16", name)
	f.Instr("MOVQ s+0(FP), SI")
	f.Instr("MOVQ n+8(FP), CX")
	for y := 8; y < 16; y++ {
		if v, ok := consts[y]; ok {
			roundConst(f, y, v)
		}
	}
	f.Instr("TESTQ CX, CX")
	f.Instr("JZ rdone")
	f.Linef("rloop:")
	f.Instr("VMOVDQU (SI), Y0")
	body()
	f.Instr("VMOVDQU Y2, (SI)")
	f.Instr("ADDQ $32, SI")
	f.Instr("SUBQ $8, CX")
	f.Instr("JNZ rloop")
	f.Linef("rdone:")
	f.Instr("VZEROUPPER")
	f.Instr("RET")
	f.Linef("")
}

// roundBF16 emits tensor.RoundBfloat16 over 8 lanes: add 0x7fff plus the lowest kept bit and
// clear the 16 dropped bits; NaN lanes keep their bits.
func roundBF16(f *asmgen.File) {
	roundLoop(f, "roundBF16AVX2", "Rounds n floats at s to bfloat16 in place (ties to even; NaN kept).",
		map[int]uint32{8: 1, 9: 0x7fff, 10: 0xffff0000, 11: 0x7fffffff, 12: 0x7f800000}, func() {
			f.Instr("VPSRLD $16, Y0, Y1")
			f.Instr("VPAND Y8, Y1, Y1")
			f.Instr("VPADDD Y9, Y1, Y1")
			f.Instr("VPADDD Y0, Y1, Y2")
			f.Instr("VPAND Y10, Y2, Y2")
			f.Instr("VPAND Y11, Y0, Y3")
			f.Instr("VPCMPGTD Y12, Y3, Y3") // |v| > Inf: NaN
			f.Instr("VPBLENDVB Y3, Y0, Y2, Y2")
		})
}

// roundFP16 emits tensor.RoundFloat16 over 8 lanes: binary16's normal range rounds by bits
// (add 0xfff plus the lowest kept bit, clear 13 bits); below it, |v| + 0.5 - 0.5 rounds to a
// multiple of 2^-24 (the spacing of floats in [0.5, 1)) with ties to even; from 65520 up the
// value overflows to a signed infinity; NaN keeps its bits.
func roundFP16(f *asmgen.File) {
	roundLoop(f, "roundFP16AVX2", "Rounds n floats at s to IEEE binary16 in place (ties to even; subnormals, infinities, NaN).",
		map[int]uint32{8: 1, 9: 0xfff, 10: 0xffffe000, 11: 0x7fffffff, 12: 0x7f800000, 13: 0x38800000, 14: 0x477fefff, 15: 0x3f000000}, func() {
			f.Instr("VPSRLD $13, Y0, Y1")
			f.Instr("VPAND Y8, Y1, Y1")
			f.Instr("VPADDD Y9, Y1, Y1")
			f.Instr("VPADDD Y0, Y1, Y2")
			f.Instr("VPAND Y10, Y2, Y2") // normal range
			f.Instr("VPAND Y11, Y0, Y3") // |v|
			f.Instr("VPXOR Y3, Y0, Y4")  // sign
			f.Instr("VADDPS Y15, Y3, Y5")
			f.Instr("VSUBPS Y15, Y5, Y5")
			f.Instr("VPOR Y4, Y5, Y5")      // subnormal range
			f.Instr("VPCMPGTD Y3, Y13, Y6") // 2^-14 > |v|
			f.Instr("VPBLENDVB Y6, Y5, Y2, Y2")
			f.Instr("VPOR Y12, Y4, Y5")     // signed infinity
			f.Instr("VPCMPGTD Y14, Y3, Y6") // |v| >= 65520
			f.Instr("VPBLENDVB Y6, Y5, Y2, Y2")
			f.Instr("VPCMPGTD Y12, Y3, Y6") // NaN
			f.Instr("VPBLENDVB Y6, Y0, Y2, Y2")
		})
}

func main() {
	asmgen.Main("kernel_gen.go", "kernel_amd64.s", func(f *asmgen.File) {
		// AVX-512: 8 rows x 3 vectors of 16 = 24 accumulators, 3 B vectors, 2 broadcasts.
		kernel(f, "kern8x48avx512", 8, 3, asmgen.AVX512)
		// AVX2: 6 rows x 2 vectors of 8 = 12 accumulators, 2 B vectors, 2 broadcasts.
		kernel(f, "kern6x16avx2", 6, 2, asmgen.AVX2)
		// Its edge: the first 4 rows of a 6-row strip (8 accumulators), for 256-row products.
		kernelStrided(f, "kern4x16avx2", 4, 6, 2, asmgen.AVX2)
		transpose8(f)
		transpose6(f)
		copyRows6(f)
		peak(f, "fmaLoopAVX512", asmgen.AVX512)
		peak(f, "fmaLoopAVX2", asmgen.AVX2)
		copyRows(f, "copyRows8", 1, asmgen.AVX2)
		copyRows(f, "copyRows16", 2, asmgen.AVX2)
		copyRows(f, "copyRows48", 3, asmgen.AVX512)
		dot4x4(f, dotF32)
		dot2x4(f, dotF32)
		dot4x4(f, dotBF16)
		dot2x4(f, dotBF16)
		prefetchRows(f)
		roundBF16(f)
		roundFP16(f)
	})
}
