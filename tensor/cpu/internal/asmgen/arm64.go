package asmgen

import "fmt"

// Go's arm64 assembler has no vector floating-point arithmetic, compares or conversions and
// no by-element multiplies, which the NEON kernels need; these write them as WORD directives
// with the instruction in a comment. Every operation is on four single-precision lanes (.4S).

// FMLAElem writes FMLA Vd.4S, Vn.4S, Vm.S[lane]: Vd += Vn * (lane of Vm), fused, one rounding.
func (f *File) FMLAElem(d, n, m, lane int) {
	f.Instr("WORD $0x%08x // FMLA V%d.4S, V%d.4S, V%d.S[%d]", EncFMLAElem(d, n, m, lane), d, n, m, lane)
}

// FMULElem writes FMUL Vd.4S, Vn.4S, Vm.S[lane]: Vd = Vn * (lane of Vm).
func (f *File) FMULElem(d, n, m, lane int) {
	f.Instr("WORD $0x%08x // FMUL V%d.4S, V%d.4S, V%d.S[%d]", EncFMULElem(d, n, m, lane), d, n, m, lane)
}

// FMULVec writes FMUL Vd.4S, Vn.4S, Vm.4S.
func (f *File) FMULVec(d, n, m int) { f.Vec3(FMUL, d, n, m) }

// Vec3Op is an Advanced SIMD "three same" operation on four single-precision lanes:
// Vd = Vn op Vm.
type Vec3Op struct {
	Name string
	base uint32
}

// The three-register operations the kernels use. FCMGT sets a lane to all ones where
// Vn > Vm (false for NaN), else zero; FMIN returns NaN where either lane is NaN.
var (
	FADD  = Vec3Op{"FADD", 0x4e20d400}
	FSUB  = Vec3Op{"FSUB", 0x4ea0d400}
	FMUL  = Vec3Op{"FMUL", 0x6e20dc00}
	FDIV  = Vec3Op{"FDIV", 0x6e20fc00}
	FMIN  = Vec3Op{"FMIN", 0x4ea0f400}
	FCMGT = Vec3Op{"FCMGT", 0x6ea0e400}
)

// Vec3 writes op Vd.4S, Vn.4S, Vm.4S.
func (f *File) Vec3(op Vec3Op, d, n, m int) {
	f.Instr("WORD $0x%08x // %s V%d.4S, V%d.4S, V%d.4S", op.Enc(d, n, m), op.Name, d, n, m)
}

// Enc encodes op Vd.4S, Vn.4S, Vm.4S (Q=1).
func (op Vec3Op) Enc(d, n, m int) uint32 {
	checkV(d, n, m)
	return op.base | uint32(m)<<16 | uint32(n)<<5 | uint32(d)
}

// Vec2Op is an Advanced SIMD "two-register miscellaneous" operation on four single-precision
// lanes: Vd = op(Vn).
type Vec2Op struct {
	Name string
	base uint32
}

// FABS clears the sign bits and FNEG flips them (NaN included, as Go's unary minus);
// FCVTZS converts to int32, rounding toward zero; FSQRT is the correctly rounded square root.
var (
	FABS   = Vec2Op{"FABS", 0x4ea0f800}
	FNEG   = Vec2Op{"FNEG", 0x6ea0f800}
	FCVTZS = Vec2Op{"FCVTZS", 0x4ea1b800}
	FSQRT  = Vec2Op{"FSQRT", 0x6ea1f800}
)

// Vec2 writes op Vd.4S, Vn.4S.
func (f *File) Vec2(op Vec2Op, d, n int) {
	f.Instr("WORD $0x%08x // %s V%d.4S, V%d.4S", op.Enc(d, n), op.Name, d, n)
}

// Enc encodes op Vd.4S, Vn.4S (Q=1).
func (op Vec2Op) Enc(d, n int) uint32 {
	checkV(d, n)
	return op.base | uint32(n)<<5 | uint32(d)
}

// SSHR writes SSHR Vd.4S, Vn.4S, #shift: an arithmetic right shift of each int32 lane.
func (f *File) SSHR(d, n, shift int) {
	f.Instr("WORD $0x%08x // SSHR V%d.4S, V%d.4S, #%d", EncSSHR(d, n, shift), d, n, shift)
}

// EncFMLAElem encodes FMLA Vd.4S, Vn.4S, Vm.S[lane] (Advanced SIMD by element, single
// precision, Q=1): the lane's high bit is H, its low bit L; M is the fifth bit of m.
func EncFMLAElem(d, n, m, lane int) uint32 {
	return encElem(0x4f801000, d, n, m, lane)
}

// EncFMULElem encodes FMUL Vd.4S, Vn.4S, Vm.S[lane], laid out as FMLAElem.
func EncFMULElem(d, n, m, lane int) uint32 {
	return encElem(0x4f809000, d, n, m, lane)
}

func encElem(base uint32, d, n, m, lane int) uint32 {
	checkV(d, n, m)
	if lane < 0 || lane > 3 {
		panic(fmt.Sprintf("asmgen: lane %d of a 4-lane register", lane))
	}
	return base | uint32(lane&1)<<21 | uint32(m)<<16 | uint32(lane>>1)<<11 | uint32(n)<<5 | uint32(d)
}

// EncFMULVec encodes FMUL Vd.4S, Vn.4S, Vm.4S (Advanced SIMD three same, Q=1, sz=0).
func EncFMULVec(d, n, m int) uint32 { return FMUL.Enc(d, n, m) }

// EncSSHR encodes SSHR Vd.4S, Vn.4S, #shift (shift by immediate, Q=1): for 32-bit lanes
// immh:immb holds 64 - shift.
func EncSSHR(d, n, shift int) uint32 {
	checkV(d, n)
	if shift < 1 || shift > 32 {
		panic(fmt.Sprintf("asmgen: SSHR of a 32-bit lane by %d", shift))
	}
	return 0x4f000400 | uint32(64-shift)<<16 | uint32(n)<<5 | uint32(d)
}

func checkV(regs ...int) {
	for _, r := range regs {
		if r < 0 || r > 31 {
			panic(fmt.Sprintf("asmgen: V%d is not an arm64 vector register", r))
		}
	}
}
