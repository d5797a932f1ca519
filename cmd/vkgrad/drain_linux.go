package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// waitRead waits, for a second at most, until what was written to f has been read, when f is
// a pipe (TIOCINQ, alias FIONREAD, counts the bytes it holds): an MPI launcher forwarding a
// rank's stderr may stop reading once the rank aborts the job, losing the error printed last.
func waitRead(f *os.File) {
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ); err != nil || n == 0 {
			return // read, or not a pipe
		}
	}
}
