//go:build ignore

// asm_gen writes kernel_amd64.s: the micro-kernels, packing helpers and FMA peak loops are
// long runs of the same instruction over different registers, generated here rather than
// written out by hand. Run with go generate.
package main

import (
	"fmt"
	"os"
	"strings"
)

var out strings.Builder

func e(format string, args ...any) {
	fmt.Fprintf(&out, format, args...)
	out.WriteByte('\n')
}

// rowAddr addresses row i of a strip whose rows are R9 bytes apart: rows 0-2 from R8, 3-5
// from R10 = R8+3*R9, 6-7 from R11 = R8+6*R9 (x86 scales stop at 8).
func rowAddr(i int) string {
	base := []string{"R8", "R10", "R11"}[i/3]
	return fmt.Sprintf([]string{"(%s)", "(%s)(R9*1)", "(%s)(R9*2)"}[i%3], base)
}

// kernel emits an mr x (nvec*vw) micro-kernel on registers named reg (Z or Y) of vw floats,
// run over strips consecutive strips of packed A and tiles of C. The k loop is unrolled
// twice; an odd k finishes with one more step. Between the two steps of each pair it
// requests one cache line of its prefetch walk (see prefetchWalk), so the next operands
// stream in under the multiply-adds instead of in bursts between kernel calls.
func kernel(name string, mr, nvec int, reg string, vw int) {
	nr := nvec * vw
	nacc := mr * nvec
	e("// func %s(k int, a *float32, b *float32, c *float32, ldc int, alpha, beta float32, strips int, pf *prefetchWalk)", name)
	e("TEXT ·%s(SB), NOSPLIT, $0-64", name)
	e("\tMOVQ strips+48(FP), AX")
	e("\tTESTQ AX, AX")
	e("\tJZ done")
	e("\tMOVQ a+8(FP), R8")
	e("\tMOVQ c+24(FP), DI")
	e("\tMOVQ ldc+32(FP), DX")
	e("\tSHLQ $2, DX")
	// The walk lives in R9 (next line), R10 (lines left in the row), R11 (rows left) and R12
	// (row start); R13 points at the struct for the row length and stride.
	e("\tMOVQ pf+56(FP), R13")
	e("\tMOVQ 0(R13), R9")
	e("\tMOVQ 8(R13), R10")
	e("\tMOVQ 16(R13), R12")
	e("\tMOVQ 24(R13), R11")
	e("strip:")
	e("\tMOVQ k+0(FP), CX")
	e("\tMOVQ b+16(FP), SI")
	// Start fetching the C tile now so the final update does not wait on it.
	e("\tMOVQ DI, BX")
	for i := 0; i < mr; i++ {
		for l := 0; l < (4*nr+63)/64; l++ {
			e("\tPREFETCHT0 %d(BX)", 64*l)
		}
		if i < mr-1 {
			e("\tADDQ DX, BX")
		}
	}
	for i := 0; i < nacc; i++ {
		e("\tVXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
	}
	breg := func(v int) int { return nacc + v }
	bc := []int{nacc + nvec, nacc + nvec + 1} // broadcast registers, alternated
	step := func(u int) {
		for v := 0; v < nvec; v++ {
			e("\tVMOVUPS %d(SI), %s%d", 4*nr*u+4*vw*v, reg, breg(v))
		}
		for i := 0; i < mr; i++ {
			r := bc[i%2]
			e("\tVBROADCASTSS %d(R8), %s%d", 4*mr*u+4*i, reg, r)
			for v := 0; v < nvec; v++ {
				e("\tVFMADD231PS %s%d, %s%d, %s%d", reg, breg(v), reg, r, reg, i*nvec+v)
			}
		}
	}
	e("\tMOVQ CX, AX")
	e("\tSHRQ $1, CX")
	e("\tJZ tail")
	e("loop:")
	step(0)
	e("\tTESTQ R11, R11")
	e("\tJZ pfdone")
	e("\tPREFETCHT1 (R9)")
	e("\tADDQ $64, R9")
	e("\tDECQ R10")
	e("\tJNZ pfdone")
	e("\tADDQ 40(R13), R12")
	e("\tMOVQ R12, R9")
	e("\tMOVQ 32(R13), R10")
	e("\tDECQ R11")
	e("pfdone:")
	step(1)
	e("\tADDQ $%d, SI", 8*nr)
	e("\tADDQ $%d, R8", 8*mr)
	e("\tDECQ CX")
	e("\tJNZ loop")
	e("tail:")
	e("\tTESTQ $1, AX")
	e("\tJZ scale")
	step(0)
	e("\tADDQ $%d, R8", 4*mr)
	e("scale:")
	al, be := nacc+nvec, nacc+nvec+1
	e("\tVBROADCASTSS alpha+40(FP), %s%d", reg, al)
	for i := 0; i < nacc; i++ {
		e("\tVMULPS %s%d, %s%d, %s%d", reg, al, reg, i, reg, i)
	}
	e("\tMOVL beta+44(FP), AX")
	e("\tANDL $0x7fffffff, AX")
	e("\tJZ store")
	e("\tVBROADCASTSS beta+44(FP), %s%d", reg, be)
	e("\tMOVQ DI, BX")
	for i := 0; i < mr; i++ {
		for v := 0; v < nvec; v++ {
			e("\tVFMADD231PS %d(BX), %s%d, %s%d", 4*vw*v, reg, be, reg, i*nvec+v)
		}
		if i < mr-1 {
			e("\tADDQ DX, BX")
		}
	}
	e("store:")
	for i := 0; i < mr; i++ {
		for v := 0; v < nvec; v++ {
			e("\tVMOVUPS %s%d, %d(DI)", reg, i*nvec+v, 4*vw*v)
		}
		e("\tADDQ DX, DI")
	}
	e("\tDECQ strips+48(FP)")
	e("\tJNZ strip")
	e("\tMOVQ R9, 0(R13)")
	e("\tMOVQ R10, 8(R13)")
	e("\tMOVQ R12, 16(R13)")
	e("\tMOVQ R11, 24(R13)")
	e("\tVZEROUPPER")
	e("done:")
	e("\tRET")
	e("")
}

// transpose8 emits the 8x8 block transpose used to pack transposed operands.
func transpose8() {
	e("// func transpose8(dst *float32, dstStride int, src *float32, srcStride int, nblk int)")
	e("// Block b reads src rows r=0..7 at src[r*srcStride + 8b : +8] and writes column t of the")
	e("// block to dst[(8b+t)*dstStride : +8].")
	e("TEXT ·transpose8(SB), NOSPLIT, $0-40")
	e("\tMOVQ dst+0(FP), DI")
	e("\tMOVQ dstStride+8(FP), DX")
	e("\tMOVQ src+16(FP), R8")
	e("\tMOVQ srcStride+24(FP), R9")
	e("\tMOVQ nblk+32(FP), CX")
	e("\tSHLQ $2, DX")
	e("\tSHLQ $2, R9")
	e("\tLEAQ (R8)(R9*2), R10")
	e("\tADDQ R9, R10")
	e("\tLEAQ (R10)(R9*2), R11")
	e("\tADDQ R9, R11")
	e("\tLEAQ (DX)(DX*2), R13")
	e("\tTESTQ CX, CX")
	e("\tJZ done")
	e("tloop:")
	for i := 0; i < 8; i++ {
		e("\tVMOVUPS %s, Y%d", rowAddr(i), i)
	}
	// Interleave row pairs, then pairs of pairs, then swap 128-bit halves.
	for p := 0; p < 4; p++ {
		a, b := 2*p, 2*p+1
		e("\tVUNPCKLPS Y%d, Y%d, Y%d", b, a, 8+2*p)
		e("\tVUNPCKHPS Y%d, Y%d, Y%d", b, a, 9+2*p)
	}
	spec := [][3]int{{8, 10, 0x44}, {8, 10, 0xEE}, {9, 11, 0x44}, {9, 11, 0xEE},
		{12, 14, 0x44}, {12, 14, 0xEE}, {13, 15, 0x44}, {13, 15, 0xEE}}
	for s, sp := range spec {
		e("\tVSHUFPS $0x%02X, Y%d, Y%d, Y%d", sp[2], sp[1], sp[0], s)
	}
	for t := 0; t < 8; t++ {
		imm := 0x20
		if t >= 4 {
			imm = 0x31
		}
		e("\tVPERM2F128 $0x%02X, Y%d, Y%d, Y%d", imm, t%4+4, t%4, 8+t)
	}
	e("\tMOVQ DI, BX")
	for t := 0; t < 8; t++ {
		if t == 4 {
			e("\tLEAQ (BX)(DX*4), BX")
		}
		addr := []string{"(BX)", "(BX)(DX*1)", "(BX)(DX*2)", "(BX)(R13*1)"}[t%4]
		e("\tVMOVUPS Y%d, %s", 8+t, addr)
	}
	e("\tLEAQ (DI)(DX*8), DI")
	e("\tADDQ $32, R8")
	e("\tADDQ $32, R10")
	e("\tADDQ $32, R11")
	e("\tDECQ CX")
	e("\tJNZ tloop")
	e("done:")
	e("\tVZEROUPPER")
	e("\tRET")
	e("")
}

// peak emits a loop of 12 independent FMAs per iteration on registers named reg.
func peak(name, reg string) {
	e("// func %s(n int)", name)
	e("TEXT ·%s(SB), NOSPLIT, $0-8", name)
	e("\tMOVQ n+0(FP), CX")
	for i := 0; i < 14; i++ {
		e("\tVXORPS %s%d, %s%d, %s%d", reg, i, reg, i, reg, i)
	}
	e("ploop:")
	for i := 0; i < 12; i++ {
		e("\tVFMADD231PS %s12, %s13, %s%d", reg, reg, reg, i)
	}
	e("\tDECQ CX")
	e("\tJNZ ploop")
	e("\tVZEROUPPER")
	e("\tRET")
	e("")
}

// copyRows emits a copy of n rows of nvec vectors (registers reg, vw floats each) from a
// strided source to a contiguous destination: packing a panel of B that is not transposed.
func copyRows(name string, nvec int, reg string, vw int) {
	width := nvec * vw
	e("// func %s(dst *float32, src *float32, srcStride int, n int)", name)
	e("// Copies n rows of %d floats from src + i*srcStride to dst + %di.", width, width)
	e("TEXT ·%s(SB), NOSPLIT, $0-32", name)
	e("\tMOVQ dst+0(FP), DI")
	e("\tMOVQ src+8(FP), SI")
	e("\tMOVQ srcStride+16(FP), DX")
	e("\tMOVQ n+24(FP), CX")
	e("\tSHLQ $2, DX")
	e("\tTESTQ CX, CX")
	e("\tJZ cdone")
	e("cloop:")
	for v := 0; v < nvec; v++ {
		e("\tVMOVUPS %d(SI), %s%d", 4*vw*v, reg, v)
	}
	for v := 0; v < nvec; v++ {
		e("\tVMOVUPS %s%d, %d(DI)", reg, v, 4*vw*v)
	}
	e("\tADDQ DX, SI")
	e("\tADDQ $%d, DI", 4*width)
	e("\tDECQ CX")
	e("\tJNZ cloop")
	e("cdone:")
	e("\tVZEROUPPER")
	e("\tRET")
	e("")
}

// prefetchRows emits a loop that asks for rows of a strided matrix to be brought into L2.
func prefetchRows() {
	e("// func prefetchRows(src uintptr, stride uintptr, rows int, lines int)")
	e("// Prefetches lines cache lines from the start of each of rows rows stride bytes apart.")
	e("TEXT ·prefetchRows(SB), NOSPLIT, $0-32")
	e("\tMOVQ src+0(FP), SI")
	e("\tMOVQ stride+8(FP), DX")
	e("\tMOVQ rows+16(FP), CX")
	e("\tMOVQ lines+24(FP), R8")
	e("\tTESTQ CX, CX")
	e("\tJZ pdone")
	e("\tTESTQ R8, R8")
	e("\tJZ pdone")
	e("prow:")
	e("\tMOVQ SI, AX")
	e("\tMOVQ R8, BX")
	e("pline:")
	e("\tPREFETCHT1 (AX)")
	e("\tADDQ $64, AX")
	e("\tDECQ BX")
	e("\tJNZ pline")
	e("\tADDQ DX, SI")
	e("\tDECQ CX")
	e("\tJNZ prow")
	e("pdone:")
	e("\tRET")
	e("")
}

// dot4x4 emits the AVX-512 4x4 dot-product kernel: 16 accumulators Z0-Z15, A rows in
// Z16-Z19, B rows in Z20-Z23, then a horizontal sum of each accumulator.
func dot4x4() {
	e("// func dot4x4avx512(k16 int, a0, a1, a2, a3 *float32, b *float32, ldb int, out *float32)")
	e("// out[4i+j] = sum over p < k16 (a multiple of 16) of ai[p] * b[j*ldb + p], i, j < 4.")
	e("TEXT ·dot4x4avx512(SB), NOSPLIT, $0-64")
	e("\tMOVQ k16+0(FP), CX")
	e("\tMOVQ a0+8(FP), R8")
	e("\tMOVQ a1+16(FP), R9")
	e("\tMOVQ a2+24(FP), R10")
	e("\tMOVQ a3+32(FP), R11")
	e("\tMOVQ b+40(FP), SI")
	e("\tMOVQ ldb+48(FP), DX")
	e("\tMOVQ out+56(FP), DI")
	e("\tSHLQ $2, DX")
	e("\tLEAQ (SI)(DX*2), R12")
	e("\tADDQ DX, R12")
	e("\tSHRQ $4, CX")
	for r := 0; r < 16; r++ {
		e("\tVXORPS Z%d, Z%d, Z%d", r, r, r)
	}
	e("\tTESTQ CX, CX")
	e("\tJZ reduce")
	e("dloop:")
	for i, reg := range []string{"R8", "R9", "R10", "R11"} {
		e("\tVMOVUPS (%s), Z%d", reg, 16+i)
	}
	for j, addr := range []string{"(SI)", "(SI)(DX*1)", "(SI)(DX*2)", "(R12)"} {
		e("\tVMOVUPS %s, Z%d", addr, 20+j)
	}
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			e("\tVFMADD231PS Z%d, Z%d, Z%d", 20+j, 16+i, 4*i+j)
		}
	}
	for _, reg := range []string{"R8", "R9", "R10", "R11", "SI", "R12"} {
		e("\tADDQ $64, %s", reg)
	}
	e("\tDECQ CX")
	e("\tJNZ dloop")
	e("reduce:")
	// Fold 512 -> 256 -> 128 -> 64 -> 32 bits: every lane ends holding the total.
	for r := 0; r < 16; r++ {
		t := 24 + r%8
		e("\tVSHUFF32X4 $0x4E, Z%d, Z%d, Z%d", r, r, t)
		e("\tVADDPS Z%d, Z%d, Z%d", t, r, r)
		e("\tVSHUFF32X4 $0xB1, Z%d, Z%d, Z%d", r, r, t)
		e("\tVADDPS Z%d, Z%d, Z%d", t, r, r)
		e("\tVPERMILPS $0x4E, Z%d, Z%d", r, t)
		e("\tVADDPS Z%d, Z%d, Z%d", t, r, r)
		e("\tVPERMILPS $0xB1, Z%d, Z%d", r, t)
		e("\tVADDPS Z%d, Z%d, Z%d", t, r, r)
		e("\tVMOVSS X%d, %d(DI)", r, 4*r)
	}
	e("\tVZEROUPPER")
	e("\tRET")
	e("")
}

func main() {
	e("// Code generated by asm_gen.go; DO NOT EDIT.")
	e("")
	e("//go:build amd64 && !purego")
	e("")
	e("#include \"textflag.h\"")
	e("")
	// AVX-512: 8 rows x 3 vectors of 16 = 24 accumulators, 3 B vectors, 2 broadcasts.
	kernel("kern8x48avx512", 8, 3, "Z", 16)
	// AVX2: 6 rows x 2 vectors of 8 = 12 accumulators, 2 B vectors, 2 broadcasts.
	kernel("kern6x16avx2", 6, 2, "Y", 8)
	transpose8()
	peak("fmaLoopAVX512", "Z")
	peak("fmaLoopAVX2", "Y")
	copyRows("copyRows8", 1, "Y", 8)
	copyRows("copyRows16", 2, "Y", 8)
	copyRows("copyRows48", 3, "Z", 16)
	dot4x4()
	prefetchRows()
	if err := os.WriteFile("kernel_amd64.s", []byte(out.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
