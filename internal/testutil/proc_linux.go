package testutil

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Alive reports whether pid runs: a zombie, killed and waiting to be reaped, does not.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// WaitGone waits up to d for pid to end and reports whether it did.
func WaitGone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !Alive(pid) {
			return true
		}
	}
	return false
}
