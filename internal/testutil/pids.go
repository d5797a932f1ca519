package testutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

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
