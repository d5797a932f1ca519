//go:build !(linux || darwin || freebsd)

package doctor

import (
	"errors"
	"runtime"
)

// freeDisk cannot ask the filesystem on this system.
func freeDisk(string) (uint64, error) {
	return 0, errors.New("free space is not readable on " + runtime.GOOS)
}
