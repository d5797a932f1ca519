package testutil

import (
	"fmt"
	"os"
	"os/exec"
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
	return cmd
}
