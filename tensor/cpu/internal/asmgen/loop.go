package asmgen

// VectorLoop writes a kernel's loop over the CX values left, one register of v at a time:
// body handles the values at pointers, which then advance by one register's bytes. The
// loop ends at label+"Done", which returns.
func (f *File) VectorLoop(v Vec, label string, pointers []string, body func()) {
	f.Linef("%sLoop:", label)
	f.Instr("CMPQ CX, $%d", v.Lanes)
	f.Instr("JL   %sDone", label)
	body()
	for _, p := range pointers {
		f.Instr("ADDQ $%d, %s", v.Bytes(), p)
	}
	f.Instr("SUBQ $%d, CX", v.Lanes)
	f.Instr("JMP  %sLoop", label)
	f.Linef("")
	f.Linef("%sDone:", label)
	f.Instrs("VZEROUPPER", "RET")
	f.Linef("")
}
