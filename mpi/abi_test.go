package mpi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestABIMatchesHeaders preprocesses each implementation's mpi.h and checks that every handle
// in its abi table is what the header's macro expands to: MPICH's integer constants, Open
// MPI's exported object names. It skips where the development headers are not installed.
func TestABIMatchesHeaders(t *testing.T) {
	cases := []struct {
		a      abi
		incdir func() (string, error)
	}{
		{openMPI, func() (string, error) { return wrapperFlag("mpicc.openmpi", "--showme:incdirs") }},
		{mpich, func() (string, error) { return wrapperFlag("mpicc.mpich", "-show") }},
	}
	for _, c := range cases {
		t.Run(c.a.name, func(t *testing.T) {
			inc, err := c.incdir()
			if err != nil {
				t.Skipf("no %s development headers (%v)", c.a.name, err)
			}
			got := expandMacros(t, inc, []string{"MPI_COMM_WORLD", "MPI_FLOAT", "MPI_DOUBLE", "MPI_INT64_T", "MPI_BYTE", "MPI_SUM",
				"MPI_ERRORS_RETURN", "MPI_IN_PLACE", "MPI_STATUS_IGNORE", "MPI_MAX_LIBRARY_VERSION_STRING"})
			handles := map[string]handle{"MPI_COMM_WORLD": c.a.commWorld, "MPI_FLOAT": c.a.float32T, "MPI_DOUBLE": c.a.float64T,
				"MPI_INT64_T": c.a.int64T, "MPI_BYTE": c.a.byteT, "MPI_SUM": c.a.opSum, "MPI_ERRORS_RETURN": c.a.errorsReturn}
			for name, h := range handles {
				exp := got[name]
				if c.a.symbols {
					if !regexp.MustCompile(`\b` + h.symbol + `\b`).MatchString(exp) {
						t.Errorf("%s expands to %q, the table says the address of %s", name, exp, h.symbol)
					}
					continue
				}
				if v, ok := lastInt(exp); !ok || uintptr(v) != h.value {
					t.Errorf("%s expands to %q, the table says %#x", name, exp, h.value)
				}
			}
			for name, want := range map[string]int64{"MPI_IN_PLACE": int64(int(c.a.inPlace)), "MPI_STATUS_IGNORE": int64(c.a.statusIgnore),
				"MPI_MAX_LIBRARY_VERSION_STRING": int64(c.a.maxVersionString)} {
				v, ok := lastInt(got[name])
				if ok && strings.Contains(got[name], "-") {
					v = -v
				}
				if !ok || v != want {
					t.Errorf("%s expands to %q, the table says %d", name, got[name], want)
				}
			}
		})
	}
}

// wrapperFlag returns the include directory an MPI compiler wrapper reports.
func wrapperFlag(wrapper, flag string) (string, error) {
	out, err := exec.Command(wrapper, flag).Output()
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(string(out)) {
		f = strings.TrimPrefix(f, "-I")
		if _, err := os.Stat(filepath.Join(f, "mpi.h")); err == nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s %s names no folder with mpi.h", wrapper, flag)
}

// expandMacros runs the C preprocessor over "name: MACRO" lines after #include <mpi.h>.
func expandMacros(t *testing.T, inc string, names []string) map[string]string {
	t.Helper()
	var src strings.Builder
	src.WriteString("#include <mpi.h>\n")
	for _, n := range names {
		fmt.Fprintf(&src, "vkgrad_%s: %s\n", n, n)
	}
	file := filepath.Join(t.TempDir(), "abi.c")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cc", "-E", "-P", "-I", inc, file).Output()
	if err != nil {
		t.Skipf("no C preprocessor: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(k, "vkgrad_") {
			got[strings.TrimPrefix(k, "vkgrad_")] = strings.TrimSpace(v)
		}
	}
	return got
}

// lastInt returns the last integer literal (decimal or hex) in s.
func lastInt(s string) (int64, bool) {
	m := regexp.MustCompile(`0[xX][0-9a-fA-F]+|\d+`).FindAllString(s, -1)
	if len(m) == 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(m[len(m)-1], 0, 64)
	return v, err == nil
}
