//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// haveAVX2FMA gates the AVX2 kernels of this package (FMA for the exponential).
var haveAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA
