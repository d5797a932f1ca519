//go:build !(((linux || darwin || freebsd || netbsd) && !android && (amd64 || arm64 || riscv64 || loong64)) || (windows && (amd64 || arm64)))

package vk

import (
	"errors"
	"runtime"
)

// Vulkan is bound for 64-bit platforms only (the struct mirrors assume 64-bit pointers).
func defaultLibraryNames() []string { return nil }

func openLibrary(name string) (uintptr, error) {
	return 0, errors.New("Vulkan is not supported on " + runtime.GOOS + "/" + runtime.GOARCH)
}

func librarySymbol(lib uintptr, name string) (uintptr, error) {
	return 0, errors.New("unsupported platform")
}

func call(fn uintptr, args ...uintptr) result     { return errInitializationFailed }
func callPtr(fn uintptr, args ...uintptr) uintptr { return 0 }
func callArgs(fn uintptr, args []uintptr) uintptr { return 0 }
func newCallback(fn any) uintptr                  { return 0 }
