package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Launcher is one MPI implementation's way to start a job, as CI installs them.
type Launcher struct {
	Name string
	cmd  []string // followed by the process count, the program and its arguments
	env  []string
}

// launchers are tried in this order; shared memory only, so no network is needed or wanted.
var launchers = []Launcher{
	{"openmpi", []string{"mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np"},
		[]string{"OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader", "OMPI_MCA_rmaps_base_oversubscribe=1"}},
	{"mpich", []string{"mpiexec.mpich", "-n"}, nil},
}

// MPILaunchers returns the launchers on PATH. With none it skips the test, or fails it when
// VKGRAD_REQUIRE_MPI=1.
func MPILaunchers(t testing.TB) []Launcher {
	t.Helper()
	var out []Launcher
	for _, l := range launchers {
		if _, err := exec.LookPath(l.cmd[0]); err == nil {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		if os.Getenv("VKGRAD_REQUIRE_MPI") == "1" {
			t.Fatal("VKGRAD_REQUIRE_MPI=1 but neither mpirun.openmpi nor mpiexec.mpich is on PATH")
		}
		t.Skip("no MPI launcher on PATH (install openmpi-bin or mpich)")
	}
	return out
}

// Command returns the command that runs np processes of program with args, with env added to
// the environment.
func (l Launcher) Command(np int, env []string, program string, args ...string) *exec.Cmd {
	a := append(append(append([]string{}, l.cmd[1:]...), fmt.Sprint(np), program), args...)
	cmd := exec.Command(l.cmd[0], a...)
	cmd.Env = append(append(os.Environ(), l.env...), env...)
	if l.Name == "openmpi" {
		cmd.Env = append(cmd.Env, "OMPI_MCA_orte_tmpdir_base="+sessionBase())
	}
	return cmd
}

// sessionBase is where this test process's Open MPI jobs keep their session directories. Test
// packages run in parallel, and jobs of several processes creating their session directories
// under one base at once can collide ("mkdir ... File exists").
var sessionBase = sync.OnceValue(func() string {
	d, err := os.MkdirTemp("", "vkgrad-ompi-")
	if err != nil {
		return os.TempDir()
	}
	return d
})

// RankEnv is set, in a job RunRanks starts, to the directory where each rank writes its result
// (WriteRankResult).
const RankEnv = "VKGRAD_RANK_RESULTS"

// RunRanks runs the test named test of this test binary as an np-rank job of l, and returns
// what each rank wrote with WriteRankResult. The test must skip itself unless RankEnv is set.
func RunRanks(t *testing.T, l Launcher, np int, test string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := l.Command(np, []string{RankEnv + "=" + dir}, exe, "-test.run=^"+test+"$", "-test.v").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s -np %d: %v\n%s", l.Name, np, err, out)
	}
	results := make([]string, np)
	for r := range np {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d", r)))
		if err != nil {
			t.Fatalf("%s -np %d: rank %d wrote nothing: %v\n%s", l.Name, np, r, err, out)
		}
		results[r] = string(b)
	}
	return results
}

// WriteRankResult records rank's result for RunRanks.
func WriteRankResult(t *testing.T, rank int, result string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(os.Getenv(RankEnv), fmt.Sprintf("rank%d", rank)), []byte(result), 0o644); err != nil {
		t.Fatal(err)
	}
}

// SkipInRankJob skips a test that starts MPI jobs when it runs inside one.
func SkipInRankJob(t *testing.T) {
	t.Helper()
	if os.Getenv(RankEnv) != "" {
		t.Skip("inside an MPI job")
	}
}

// RankJobOnly skips a rank test outside the MPI job that parent starts.
func RankJobOnly(t *testing.T, parent string) {
	t.Helper()
	if os.Getenv(RankEnv) == "" {
		t.Skip("runs only inside the MPI job of " + parent)
	}
}

// SameOnEveryRank runs the rank test named test as a job of each count in nps under each
// installed MPI, and fails for every rank whose result differs from want (what one process
// computes).
func SameOnEveryRank(t *testing.T, test, want string, nps ...int) {
	t.Helper()
	for _, l := range MPILaunchers(t) {
		for _, np := range nps {
			for r, got := range RunRanks(t, l, np, test) {
				if got != want {
					t.Errorf("%s -np %d rank %d: %s, one process %s", l.Name, np, r, got, want)
				}
			}
		}
	}
}
