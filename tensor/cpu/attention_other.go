//go:build (!amd64 && !arm64) || purego

package cpu

// attnKernelSets is empty: the portable loops serve.
var attnKernelSets []*attnKernels
