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
