//go:build ((linux || darwin || freebsd || netbsd) && !android && (amd64 || arm64 || riscv64 || loong64)) || (windows && (amd64 || arm64))

package vk

import "github.com/ebitengine/purego"

// call invokes a Vulkan function returning VkResult. Pointers are passed as
// uintptr(unsafe.Pointer(p)) in the call expression itself; uintptrescapes keeps them alive
// and on the heap for the duration of the call.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) result {
	r, _, _ := purego.SyscallN(fn, args...)
	return result(int32(r))
}

// callPtr invokes a Vulkan function returning a pointer or nothing.
//
//go:uintptrescapes
func callPtr(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// callArgs invokes a Vulkan function with args as they are. It is not go:uintptrescapes (whose
// call sites each allocate their argument slice), so nothing keeps pointers alive for it:
// args must be on the heap, and every pointer among them must point into a heap object that
// stays reachable during the call (see Device.rcall).
func callArgs(fn uintptr, args []uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
