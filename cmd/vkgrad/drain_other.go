//go:build !linux

package main

import (
	"os"
	"time"
)

// waitRead gives an MPI launcher forwarding a rank's stderr (f) a moment to read what the
// rank wrote last, before the rank aborts the job and the launcher may stop reading.
func waitRead(f *os.File) { time.Sleep(250 * time.Millisecond) }
