//go:build !((linux || darwin || freebsd || netbsd) && !android && (amd64 || arm64 || riscv64 || loong64))

package mpi

import (
	"errors"
	"runtime"
)

var errUnsupported = errors.New("MPI is not supported on " + runtime.GOOS + "/" + runtime.GOARCH)

func dlopen(string) (uintptr, error)         { return 0, errUnsupported }
func dlsym(uintptr, string) (uintptr, error) { return 0, errUnsupported }
func call(fn uintptr, args ...uintptr) int32 { return -1 }
