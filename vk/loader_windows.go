//go:build windows && (amd64 || arm64)

package vk

import "syscall"

func defaultLibraryNames() []string { return []string{"vulkan-1.dll"} }

func openLibrary(name string) (uintptr, error) {
	h, err := syscall.LoadLibrary(name)
	return uintptr(h), err
}

func librarySymbol(lib uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(lib), name)
}
