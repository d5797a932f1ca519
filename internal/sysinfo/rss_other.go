//go:build !unix

package sysinfo

// PeakRSS is unknown on this platform.
func PeakRSS() int64 { return 0 }
