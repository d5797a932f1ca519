package asmgen

import "fmt"

// Vec is a vector instruction set as the kernels use it: AVX2's Y registers of 8 float32s
// or AVX-512's Z registers of 16.
type Vec struct {
	Suffix string // of the kernel names: AVX2, AVX512
	Reg    string // register prefix: Y, Z
	Lanes  int    // float32s per register
}

// The two instruction sets the kernels are written for.
var (
	AVX2   = Vec{"AVX2", "Y", 8}
	AVX512 = Vec{"AVX512", "Z", 16}
)

// R names vector register i.
func (v Vec) R(i int) string { return fmt.Sprintf("%s%d", v.Reg, i) }

// Bytes is the size of one register.
func (v Vec) Bytes() int { return 4 * v.Lanes }

// Bcst is op with a float32 constant from an 8-lane table as its memory operand: AVX2
// reads the table's whole 32-byte row, AVX-512 broadcasts its first lane (.BCST).
func (v Vec) Bcst(op string) string {
	if v.Lanes == 16 {
		return op + ".BCST"
	}
	return op
}

// Bitwise names the bitwise operation AND, OR or XOR on float registers: AVX-512F has them
// only as integer operations on doublewords.
func (v Vec) Bitwise(op string) string {
	if v.Lanes == 16 {
		return "VP" + op + "D"
	}
	return "V" + op + "PS"
}

// Splat names the instruction that fills a register with a constant from an 8-lane table.
func (v Vec) Splat() string {
	if v.Lanes == 16 {
		return "VBROADCASTSS"
	}
	return "VMOVUPS"
}
