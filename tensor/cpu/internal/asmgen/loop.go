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

// Arm64Loop writes an arm64 kernel's loop over the values left in register count, step at a
// time, around body (which advances its own pointers); it falls through to label+"done".
func (f *File) Arm64Loop(label, count string, step int, body func()) {
	f.Linef("%sloop:", label)
	f.Instr("CMP $%d, %s", step, count)
	f.Instr("BLT %sdone", label)
	body()
	f.Instr("SUB $%d, %s, %s", step, count, count)
	f.Instr("B %sloop", label)
	f.Linef("")
	f.Linef("%sdone:", label)
}
