//go:build (linux || darwin || freebsd || netbsd) && !android && (amd64 || arm64 || riscv64 || loong64)

package mpi

import "github.com/ebitengine/purego"

// dlopen loads with RTLD_GLOBAL: Open MPI's components are plugins that resolve symbols of
// libmpi itself, which they find only in the global namespace.
func dlopen(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

// call invokes an MPI function and returns its int result. Pointers are passed as
// uintptr(unsafe.Pointer(p)) in the call expression; uintptrescapes keeps them alive.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}
