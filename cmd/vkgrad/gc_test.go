package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// vkgrad collects at gcPercent unless GOGC chooses the target.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "70") // and restored after the test
	debug.SetGCPercent(70)
	if got := tuneGC(); got != 70 || debug.SetGCPercent(70) != 70 {
		t.Fatalf("with GOGC=70 tuneGC left the target at %d, want 70", got)
	}
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	if got := tuneGC(); got != gcPercent || debug.SetGCPercent(gcPercent) != gcPercent {
		t.Fatalf("without GOGC the target is %d, want %d", got, gcPercent)
	}
}
