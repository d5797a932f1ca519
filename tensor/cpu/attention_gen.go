//go:build ignore

// attention_gen writes attention_amd64.s: the attention kernels in AVX-512 and AVX2 versions, which
// differ only in vector width and register count, and the transposes that pack keys (16x16 in
// AVX-512, 8x8 in AVX2).
// Run with go generate; TestAssemblyUpToDate fails when attention_amd64.s differs from its output.
package main

import (
	"fmt"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// perBlock is the registers per packed block of 16 keys.
func perBlock(s asmgen.Vec) int { return 16 / s.Lanes }

var qRows = []string{"SI", "R10", "R11", "R12"}

// scores4 writes attnScores4: four query rows against nb blocks at a time (then one).
func scores4(f *asmgen.File, s asmgen.Vec) {
	H, VB := perBlock(s), s.Bytes()
	f.Linef("// func attnScores4%s(s *float32, ss int, q *float32, qs int, kt *float32, hs, nblk int)", s.Suffix)
	f.Linef("// Four query rows: s[r*ss+b*16+j] = sum over i of q[r*qs+i]*kt[(b*hs+i)*16+j], in order of i.")
	f.Linef("TEXT ·attnScores4%s(SB), NOSPLIT, $0-56", s.Suffix)
	f.Instrs("MOVQ s+0(FP), DI", "MOVQ ss+8(FP), R14", "SHLQ $2, R14", "MOVQ q+16(FP), SI", "MOVQ qs+24(FP), R15", "SHLQ $2, R15",
		"MOVQ kt+32(FP), DX", "MOVQ hs+40(FP), R8", "MOVQ nblk+48(FP), CX", "MOVQ R8, R9", "SHLQ $6, R9 // bytes per packed block",
		"SHLQ $2, R8 // bytes per query row", "LEAQ (SI)(R15*1), R10", "LEAQ (R10)(R15*1), R11", "LEAQ (R11)(R15*1), R12",
		"XORQ BX, BX // byte offset of the current block in a row of s")
	f.Linef("")
	nbs := []int{1}
	if s.Lanes == 16 {
		nbs = []int{2, 1}
	}
	done := "s4done" + s.Suffix
	for idx, nb := range nbs {
		lab := fmt.Sprintf("s4b%d%s", nb, s.Suffix)
		next := done
		if idx+1 < len(nbs) {
			next = fmt.Sprintf("s4b%d%s", nbs[idx+1], s.Suffix)
		}
		f.Linef("%s:", lab)
		f.Instrs(fmt.Sprintf("CMPQ CX, $%d", nb), "JL   "+next)
		nacc := 4 * nb * H
		for i := 0; i < nacc; i++ {
			f.Instrs(fmt.Sprintf("VXORPS %s, %s, %s", s.R(i), s.R(i), s.R(i)))
		}
		f.Instrs("MOVQ DX, AX")
		if nb == 2 {
			f.Instrs("LEAQ (DX)(R9*1), R13")
		}
		f.Instrs("XORQ R15, R15")
		f.Linef("%si:", lab)
		var kregs []int
		kr := nacc
		for b := 0; b < nb; b++ {
			base := "AX"
			if b > 0 {
				base = "R13"
			}
			for h := 0; h < H; h++ {
				f.Instrs(fmt.Sprintf("VMOVUPS %d(%s), %s", h*VB, base, s.R(kr)))
				kregs = append(kregs, kr)
				kr++
			}
		}
		bc, tmp := kr, kr+1
		for row, q := range qRows {
			f.Instrs(fmt.Sprintf("VBROADCASTSS (%s)(R15*1), %s", q, s.R(bc)))
			for k, kreg := range kregs {
				t, a := tmp+k%2, row*nb*H+k
				f.Instrs(fmt.Sprintf("VMULPS %s, %s, %s", s.R(kreg), s.R(bc), s.R(t)),
					fmt.Sprintf("VADDPS %s, %s, %s", s.R(t), s.R(a), s.R(a)))
			}
		}
		f.Instrs("ADDQ $64, AX")
		if nb == 2 {
			f.Instrs("ADDQ $64, R13")
		}
		f.Instrs("ADDQ $4, R15", "CMPQ R15, R8", fmt.Sprintf("JL   %si", lab), "LEAQ (DI)(BX*1), AX")
		for row := 0; row < 4; row++ {
			for k := 0; k < nb*H; k++ {
				f.Instrs(fmt.Sprintf("VMOVUPS %s, %d(AX)", s.R(row*nb*H+k), k*VB))
			}
			if row < 3 {
				f.Instrs("ADDQ R14, AX")
			}
		}
		f.Instrs(fmt.Sprintf("ADDQ $%d, BX", 64*nb))
		if nb == 2 {
			f.Instrs("LEAQ (DX)(R9*2), DX")
		} else {
			f.Instrs("ADDQ R9, DX")
		}
		f.Instrs(fmt.Sprintf("SUBQ $%d, CX", nb), "JMP  "+lab)
		f.Linef("")
	}
	f.Linef("%s:", done)
	f.Instrs("VZEROUPPER", "RET")
	f.Linef("")
}

// scores1 writes attnScores1: one query row against nb blocks at a time (then one).
func scores1(f *asmgen.File, s asmgen.Vec) {
	H, VB := perBlock(s), s.Bytes()
	f.Linef("// func attnScores1%s(s, q, kt *float32, hs, nblk int)", s.Suffix)
	f.Linef("// One query row: s[b*16+j] = sum over i of q[i]*kt[(b*hs+i)*16+j], in order of i.")
	f.Linef("TEXT ·attnScores1%s(SB), NOSPLIT, $0-40", s.Suffix)
	f.Instrs("MOVQ s+0(FP), DI", "MOVQ q+8(FP), SI", "MOVQ kt+16(FP), DX", "MOVQ hs+24(FP), R8", "MOVQ nblk+32(FP), CX",
		"MOVQ R8, R9", "SHLQ $6, R9", "SHLQ $2, R8")
	f.Linef("")
	nbs := []int{2, 1}
	if s.Lanes == 16 {
		nbs = []int{4, 1}
	}
	done := "s1done" + s.Suffix
	for idx, nb := range nbs {
		lab := fmt.Sprintf("s1b%d%s", nb, s.Suffix)
		next := done
		if idx+1 < len(nbs) {
			next = fmt.Sprintf("s1b%d%s", nbs[idx+1], s.Suffix)
		}
		f.Linef("%s:", lab)
		f.Instrs(fmt.Sprintf("CMPQ CX, $%d", nb), "JL   "+next)
		nacc := nb * H
		for i := 0; i < nacc; i++ {
			f.Instrs(fmt.Sprintf("VXORPS %s, %s, %s", s.R(i), s.R(i), s.R(i)))
		}
		ptrs := []string{"AX", "R10", "R11", "R12"}[:nb]
		f.Instrs("MOVQ DX, AX")
		for b := 1; b < nb; b++ {
			f.Instrs(fmt.Sprintf("LEAQ (%s)(R9*1), %s", ptrs[b-1], ptrs[b]))
		}
		f.Instrs("XORQ R15, R15")
		f.Linef("%si:", lab)
		bc, tmp := nacc, nacc+1
		f.Instrs(fmt.Sprintf("VBROADCASTSS (SI)(R15*1), %s", s.R(bc)))
		for b := 0; b < nb; b++ {
			for h := 0; h < H; h++ {
				a := b*H + h
				t := tmp + a%4
				f.Instrs(fmt.Sprintf("VMULPS %d(%s), %s, %s", h*VB, ptrs[b], s.R(bc), s.R(t)),
					fmt.Sprintf("VADDPS %s, %s, %s", s.R(t), s.R(a), s.R(a)))
			}
		}
		for _, p := range ptrs {
			f.Instrs("ADDQ $64, " + p)
		}
		f.Instrs("ADDQ $4, R15", "CMPQ R15, R8", fmt.Sprintf("JL   %si", lab))
		for a := 0; a < nacc; a++ {
			f.Instrs(fmt.Sprintf("VMOVUPS %s, %d(DI)", s.R(a), a*VB))
		}
		f.Instrs(fmt.Sprintf("ADDQ $%d, DI", 64*nb))
		switch nb {
		case 4:
			f.Instrs("LEAQ (DX)(R9*4), DX")
		case 2:
			f.Instrs("LEAQ (DX)(R9*2), DX")
		default:
			f.Instrs("ADDQ R9, DX")
		}
		f.Instrs(fmt.Sprintf("SUBQ $%d, CX", nb), "JMP  "+lab)
		f.Linef("")
	}
	f.Linef("%s:", done)
	f.Instrs("VZEROUPPER", "RET")
	f.Linef("")
}

// combGroup writes one column group of attnComb: rows rows of floats values each, summed
// over j; the caller has set DI, R14, DX, R9, R13, CX, BX and the weight row pointers.
func combGroup(f *asmgen.File, s asmgen.Vec, lab string, rows, floats int, wregs []string, next string, nOff int) {
	nv, VB := floats/s.Lanes, s.Bytes()
	f.Linef("%s:", lab)
	f.Instrs(fmt.Sprintf("CMPQ CX, $%d", floats), "JL   "+next, fmt.Sprintf("MOVQ n+%d(FP), R8", nOff),
		"TESTQ BX, BX", fmt.Sprintf("JZ   %sz", lab), "MOVQ DI, AX")
	for r := 0; r < rows; r++ {
		for v := 0; v < nv; v++ {
			f.Instrs(fmt.Sprintf("VMOVUPS %d(AX), %s", VB*v, s.R(r*nv+v)))
		}
		if r < rows-1 {
			f.Instrs("ADDQ R14, AX")
		}
	}
	f.Instrs(fmt.Sprintf("JMP  %sp", lab))
	f.Linef("%sz:", lab)
	for i := 0; i < rows*nv; i++ {
		f.Instrs(fmt.Sprintf("VXORPS %s, %s, %s", s.R(i), s.R(i), s.R(i)))
	}
	f.Linef("%sp:", lab)
	f.Instrs("TESTQ R8, R8", fmt.Sprintf("JZ   %ss", lab), "MOVQ DX, AX", "XORQ R15, R15")
	f.Linef("%sj:", lab)
	base := rows * nv
	loadX := rows > 1 // with one row, x is read straight from memory by the multiplies
	bc := base
	if loadX {
		for v := 0; v < nv; v++ {
			f.Instrs(fmt.Sprintf("VMOVUPS %d(AX), %s", VB*v, s.R(base+v)))
		}
		bc = base + nv
	}
	ntmp := 2
	if s.Lanes == 16 {
		ntmp = 4
	}
	for r, w := range wregs {
		f.Instrs(fmt.Sprintf("VBROADCASTSS (%s)(R15*1), %s", w, s.R(bc)))
		for v := 0; v < nv; v++ {
			t, a := bc+1+v%ntmp, r*nv+v
			if loadX {
				f.Instrs(fmt.Sprintf("VMULPS %s, %s, %s", s.R(base+v), s.R(bc), s.R(t)))
			} else {
				f.Instrs(fmt.Sprintf("VMULPS %d(AX), %s, %s", VB*v, s.R(bc), s.R(t)))
			}
			f.Instrs(fmt.Sprintf("VADDPS %s, %s, %s", s.R(t), s.R(a), s.R(a)))
		}
	}
	f.Instrs("ADDQ R9, AX", "ADDQ R13, R15", "DECQ R8", fmt.Sprintf("JNZ  %sj", lab))
	f.Linef("%ss:", lab)
	f.Instrs("MOVQ DI, AX")
	for r := 0; r < rows; r++ {
		for v := 0; v < nv; v++ {
			f.Instrs(fmt.Sprintf("VMOVUPS %s, %d(AX)", s.R(r*nv+v), VB*v))
		}
		if r < rows-1 {
			f.Instrs("ADDQ R14, AX")
		}
	}
	f.Instrs(fmt.Sprintf("ADDQ $%d, DI", floats*4), fmt.Sprintf("ADDQ $%d, DX", floats*4), fmt.Sprintf("SUBQ $%d, CX", floats), "JMP  "+lab)
	f.Linef("")
}

// combGroups writes a combine kernel's column groups, widest first.
func combGroups(f *asmgen.File, s asmgen.Vec, prefix string, rows int, groups []int, wregs []string, nOff int) {
	done := prefix + "done" + s.Suffix
	for i, g := range groups {
		next := done
		if i+1 < len(groups) {
			next = fmt.Sprintf("%sg%d%s", prefix, groups[i+1], s.Suffix)
		}
		combGroup(f, s, fmt.Sprintf("%sg%d%s", prefix, g, s.Suffix), rows, g, wregs, next, nOff)
	}
	f.Linef("%s:", done)
	f.Instrs("VZEROUPPER", "RET")
	f.Linef("")
}

func comb(f *asmgen.File, s asmgen.Vec) {
	f.Linef("// func attnComb4%s(out *float32, os int, w *float32, ws, wstep int, x *float32, xs, n, hs, acc int)", s.Suffix)
	f.Linef("// Four rows: out[r*os+i] = (acc ? out[r*os+i] : 0) + sum over j < n of w[r*ws+j*wstep]*x[j*xs+i],")
	f.Linef("// in order of j, for i < hs (a multiple of 16).")
	f.Linef("TEXT ·attnComb4%s(SB), NOSPLIT, $0-80", s.Suffix)
	f.Instrs("MOVQ out+0(FP), DI", "MOVQ os+8(FP), R14", "SHLQ $2, R14", "MOVQ w+16(FP), SI", "MOVQ ws+24(FP), R15", "SHLQ $2, R15",
		"MOVQ wstep+32(FP), R13", "SHLQ $2, R13", "MOVQ x+40(FP), DX", "MOVQ xs+48(FP), R9", "SHLQ $2, R9", "MOVQ hs+64(FP), CX",
		"MOVQ acc+72(FP), BX", "LEAQ (SI)(R15*1), R10", "LEAQ (R10)(R15*1), R11", "LEAQ (R11)(R15*1), R12")
	groups := []int{16}
	if s.Lanes == 16 {
		groups = []int{64, 16}
	}
	combGroups(f, s, "c4", 4, groups, qRows, 56)
	f.Linef("// func attnComb1%s(out, w *float32, wstep int, x *float32, xs, n, hs, acc int)", s.Suffix)
	f.Linef("// One row: out[i] = (acc ? out[i] : 0) + sum over j < n of w[j*wstep]*x[j*xs+i], in order of j.")
	f.Linef("TEXT ·attnComb1%s(SB), NOSPLIT, $0-64", s.Suffix)
	f.Instrs("MOVQ out+0(FP), DI", "MOVQ w+8(FP), SI", "MOVQ wstep+16(FP), R13", "SHLQ $2, R13", "MOVQ x+24(FP), DX",
		"MOVQ xs+32(FP), R9", "SHLQ $2, R9", "MOVQ hs+48(FP), CX", "MOVQ acc+56(FP), BX")
	combGroups(f, s, "c1", 1, []int{64, 16}, []string{"SI"}, 40)
}

// loadKeyRows loads n keys into registers 0..n-1 of kind reg ("Z", "Y"): key j at AX + j*R8
// bytes (R9 = 3*R8), advancing AX four keys at a time.
func loadKeyRows(f *asmgen.File, reg string, n int) {
	for j := 0; j < n; j++ {
		if j%4 == 0 && j > 0 {
			f.Instrs("LEAQ (AX)(R8*4), AX")
		}
		addr := [4]string{"(AX)", "(AX)(R8*1)", "(AX)(R8*2)", "(AX)(R9*1)"}[j%4]
		f.Instrs(fmt.Sprintf("VMOVUPS %s, %s%d", addr, reg, j))
	}
}

// pack writes attnPackBlock: per 16 values of each key, load 16 rows, transpose them with
// 32-bit and 64-bit unpacks and two rounds of 128-bit lane shuffles, store 16 rows.
func pack(f *asmgen.File) {
	f.Linef("// func attnPackBlock(dst, src *float32, stride, hs int)")
	f.Linef("// Packs 16 keys (key j's hs values at src[j*stride:], hs a multiple of 16) value-major,")
	f.Linef("// dst[i*16+j] = src[j*stride+i], by 16x16 transposes in registers.")
	f.Linef("TEXT ·attnPackBlock(SB), NOSPLIT, $0-32")
	f.Instrs("MOVQ dst+0(FP), DI", "MOVQ src+8(FP), SI", "MOVQ stride+16(FP), R8", "SHLQ $2, R8", "MOVQ hs+24(FP), CX",
		"LEAQ (R8)(R8*2), R9 // 3 rows")
	f.Linef("")
	f.Linef("pk:")
	f.Instrs("CMPQ CX, $16", "JL   pkdone", "MOVQ SI, AX")
	loadKeyRows(f, "Z", 16)
	// Rows 2p and 2p+1 interleaved: Z16+2p (low halves of each lane pair), Z17+2p (high).
	for p := 0; p < 8; p++ {
		f.Instrs(fmt.Sprintf("VUNPCKLPS Z%d, Z%d, Z%d", 2*p+1, 2*p, 16+2*p), fmt.Sprintf("VUNPCKHPS Z%d, Z%d, Z%d", 2*p+1, 2*p, 17+2*p))
	}
	// Z(4g+m) holds rows 4g..4g+3 at values m, m+4, m+8, m+12 (one per 128-bit lane).
	for g := 0; g < 4; g++ {
		t, u := 16+4*g, 4*g
		f.Instrs(fmt.Sprintf("VUNPCKLPD Z%d, Z%d, Z%d", t+2, t, u), fmt.Sprintf("VUNPCKHPD Z%d, Z%d, Z%d", t+2, t, u+1),
			fmt.Sprintf("VUNPCKLPD Z%d, Z%d, Z%d", t+3, t+1, u+2), fmt.Sprintf("VUNPCKHPD Z%d, Z%d, Z%d", t+3, t+1, u+3))
	}
	type shuf struct{ a, b, imm int }
	var outs [16]shuf
	for m := 0; m < 4; m++ {
		v := 16 + 4*m
		f.Instrs(fmt.Sprintf("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 4+m, m, v), fmt.Sprintf("VSHUFF32X4 $0xDD, Z%d, Z%d, Z%d", 4+m, m, v+1),
			fmt.Sprintf("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 12+m, 8+m, v+2), fmt.Sprintf("VSHUFF32X4 $0xDD, Z%d, Z%d, Z%d", 12+m, 8+m, v+3))
		outs[m], outs[m+8] = shuf{v, v + 2, 0x88}, shuf{v, v + 2, 0xDD}
		outs[m+4], outs[m+12] = shuf{v + 1, v + 3, 0x88}, shuf{v + 1, v + 3, 0xDD}
	}
	for i, o := range outs {
		f.Instrs(fmt.Sprintf("VSHUFF32X4 $0x%X, Z%d, Z%d, Z%d", o.imm, o.b, o.a, i), fmt.Sprintf("VMOVUPS Z%d, %d(DI)", i, 64*i))
	}
	f.Instrs("ADDQ $64, SI", "ADDQ $1024, DI", "SUBQ $16, CX", "JMP  pk")
	f.Linef("")
	f.Linef("pkdone:")
	f.Instrs("VZEROUPPER", "RET")
}

// packAVX2 writes attnPackBlockAVX2: per 8 values of each key, two 8x8 transposes in registers
// (keys 0-7 and 8-15), each by 32-bit unpacks, 64-bit shuffles and a 128-bit lane exchange.
func packAVX2(f *asmgen.File) {
	f.Linef("// func attnPackBlockAVX2(dst, src *float32, stride, hs int)")
	f.Linef("// attnPackBlock's layout (hs a multiple of 8) with 256-bit registers.")
	f.Linef("TEXT ·attnPackBlockAVX2(SB), NOSPLIT, $0-32")
	f.Instrs("MOVQ dst+0(FP), DI", "MOVQ src+8(FP), SI", "MOVQ stride+16(FP), R8", "SHLQ $2, R8", "MOVQ hs+24(FP), CX",
		"LEAQ (R8)(R8*2), R9 // 3 rows", "LEAQ (SI)(R8*8), R10 // key 8")
	f.Linef("")
	f.Linef("pk2:")
	f.Instrs("CMPQ CX, $8", "JL   pk2done")
	for half, base := range []string{"SI", "R10"} {
		f.Instrs("MOVQ " + base + ", AX")
		loadKeyRows(f, "Y", 8)
		for p := 0; p < 4; p++ {
			f.Instrs(fmt.Sprintf("VUNPCKLPS Y%d, Y%d, Y%d", 2*p+1, 2*p, 8+2*p), fmt.Sprintf("VUNPCKHPS Y%d, Y%d, Y%d", 2*p+1, 2*p, 9+2*p))
		}
		for g := 0; g < 2; g++ {
			t, u := 8+4*g, 4*g
			f.Instrs(fmt.Sprintf("VSHUFPS $0x44, Y%d, Y%d, Y%d", t+2, t, u), fmt.Sprintf("VSHUFPS $0xEE, Y%d, Y%d, Y%d", t+2, t, u+1),
				fmt.Sprintf("VSHUFPS $0x44, Y%d, Y%d, Y%d", t+3, t+1, u+2), fmt.Sprintf("VSHUFPS $0xEE, Y%d, Y%d, Y%d", t+3, t+1, u+3))
		}
		// Y(8+t) is value t of the eight keys: row t of the block, at dst[t*16 + 8*half].
		for m := 0; m < 4; m++ {
			f.Instrs(fmt.Sprintf("VPERM2F128 $0x20, Y%d, Y%d, Y%d", 4+m, m, 8+m), fmt.Sprintf("VPERM2F128 $0x31, Y%d, Y%d, Y%d", 4+m, m, 12+m))
		}
		for t := 0; t < 8; t++ {
			f.Instrs(fmt.Sprintf("VMOVUPS Y%d, %d(DI)", 8+t, 64*t+32*half))
		}
	}
	f.Instrs("ADDQ $32, SI", "ADDQ $32, R10", "ADDQ $512, DI", "SUBQ $8, CX", "JMP  pk2")
	f.Linef("")
	f.Linef("pk2done:")
	f.Instrs("VZEROUPPER", "RET")
}

func main() {
	asmgen.Main("attention_gen.go", "attention_amd64.s", func(f *asmgen.File) {
		f.Linef("// Attention kernels, in AVX-512 and AVX2 versions. Every lane adds its terms in the order")
		f.Linef("// the portable loops in attention.go do, with separate multiplies and adds (no FMA), so")
		f.Linef("// results equal them bit for bit whatever the blocking.")
		f.Linef("")
		for _, s := range []asmgen.Vec{asmgen.AVX512, asmgen.AVX2} {
			scores4(f, s)
			scores1(f, s)
			comb(f, s)
		}
		pack(f)
		packAVX2(f)
	})
}
