//go:build !linux

package cpu

// adviseHugePages is a no-op where transparent huge pages cannot be requested.
func adviseHugePages[E float32 | uint16]([]E) {}
