package asmgen

import "fmt"

// Go's arm64 assembler has no by-element multiply-add and no vector multiply, which the NEON
// kernels need; these write them as WORD directives with the instruction in a comment.

// FMLAElem writes FMLA Vd.4S, Vn.4S, Vm.S[lane]: Vd += Vn * (lane of Vm), fused, one rounding.
func (f *File) FMLAElem(d, n, m, lane int) {
	f.Instr("WORD $0x%08x // FMLA V%d.4S, V%d.4S, V%d.S[%d]", EncFMLAElem(d, n, m, lane), d, n, m, lane)
}

// FMULVec writes FMUL Vd.4S, Vn.4S, Vm.4S.
func (f *File) FMULVec(d, n, m int) {
	f.Instr("WORD $0x%08x // FMUL V%d.4S, V%d.4S, V%d.4S", EncFMULVec(d, n, m), d, n, m)
}

// EncFMLAElem encodes FMLA Vd.4S, Vn.4S, Vm.S[lane] (Advanced SIMD by element, single
// precision, Q=1): the lane's high bit is H, its low bit L; M is the fifth bit of m.
func EncFMLAElem(d, n, m, lane int) uint32 {
	checkV(d, n, m)
	if lane < 0 || lane > 3 {
		panic(fmt.Sprintf("asmgen: lane %d of a 4-lane register", lane))
	}
	return 0x4f801000 | uint32(lane&1)<<21 | uint32(m)<<16 | uint32(lane>>1)<<11 | uint32(n)<<5 | uint32(d)
}

// EncFMULVec encodes FMUL Vd.4S, Vn.4S, Vm.4S (Advanced SIMD three same, Q=1, sz=0).
func EncFMULVec(d, n, m int) uint32 {
	checkV(d, n, m)
	return 0x6e20dc00 | uint32(m)<<16 | uint32(n)<<5 | uint32(d)
}

func checkV(regs ...int) {
	for _, r := range regs {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("asmgen: V%d is not an arm64 vector register", r))
		}
	}
}
