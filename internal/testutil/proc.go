package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Executable returns the path of the running test binary, for tests that run it again as
// another program; it fails t when the path is unknown.
func Executable(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// SleepInBackground returns a shell command that starts a long sleep in the background,
// appends the sleep's process id to pidFile (a new file in t's temporary directory) and then
// runs then: for tests that a program's children end with it (read the ids with ReadPids).
func SleepInBackground(t testing.TB, then string) (cmd, pidFile string) {
	pidFile = filepath.Join(t.TempDir(), "pid")
	return fmt.Sprintf("sleep 3600 & echo $! >> %s; %s", pidFile, then), pidFile
}

// ReadPids returns the process ids in the file name, separated by white space, as a test's
// child processes write them; it fails t when the file cannot be read or holds anything else.
func ReadPids(t testing.TB, name string) []int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// ReadPid returns the one process id in the file name; it fails t when there is not exactly one.
func ReadPid(t testing.TB, name string) int {
	t.Helper()
	pids := ReadPids(t, name)
	if len(pids) != 1 {
		t.Fatalf("%s: %d process ids, want one", name, len(pids))
	}
	return pids[0]
}
