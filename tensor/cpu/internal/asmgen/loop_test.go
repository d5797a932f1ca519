package asmgen

import "testing"

func TestVectorLoopAdvancesOneRegisterPerPass(t *testing.T) {
	f := &File{}
	f.VectorLoop(AVX512, "k", []string{"SI", "DI"}, func() { f.Op("VMOVUPS", "(SI)", "Z0") })
	want := "kLoop:\n\tCMPQ CX, $16\n\tJL   kDone\n\tVMOVUPS (SI), Z0\n\tADDQ $64, SI\n\tADDQ $64, DI\n" +
		"\tSUBQ $16, CX\n\tJMP  kLoop\n\nkDone:\n\tVZEROUPPER\n\tRET\n\n"
	if got := f.b.String(); got != want {
		t.Errorf("VectorLoop wrote\n%s\nwant\n%s", got, want)
	}
}

func TestArm64LoopStepsAndFallsThrough(t *testing.T) {
	f := &File{}
	f.Arm64Loop("k", "R3", 8, func() { f.Instr("VLD1.P 32(R1), [V0.S4, V1.S4]") })
	want := "kloop:\n\tCMP $8, R3\n\tBLT kdone\n\tVLD1.P 32(R1), [V0.S4, V1.S4]\n\tSUB $8, R3, R3\n\tB kloop\n\nkdone:\n"
	if got := f.b.String(); got != want {
		t.Errorf("Arm64Loop wrote\n%s\nwant\n%s", got, want)
	}
}
