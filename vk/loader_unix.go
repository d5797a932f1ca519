//go:build (linux || darwin || freebsd || netbsd) && !android && (amd64 || arm64 || riscv64 || loong64)

package vk

import (
	"os"
	"runtime"

	"github.com/ebitengine/purego"
)

func defaultLibraryNames() []string {
	if runtime.GOOS == "darwin" {
		return darwinLibraryNames(os.Getenv)
	}
	return []string{"libvulkan.so.1", "libvulkan.so"}
}

func openLibrary(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func librarySymbol(lib uintptr, name string) (uintptr, error) {
	return purego.Dlsym(lib, name)
}
