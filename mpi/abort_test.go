//go:build unix

package mpi

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// abortRankEnv marks the processes of the job TestFaultAbortWhileACollectiveWaits launches.
const abortRankEnv = "VKGRAD_DIST_ABORT_TEST"

// TestFaultAbortWhileACollectiveWaits: a rank whose MPI thread waits in a collective no other
// rank joins still ends the job, under each installed MPI: Abort gives up on the held thread
// within seconds, the rank exits non-zero, and the launcher ends rank 0, which is not in MPI
// at all. Abort used to queue MPI_Abort behind the collective and wait with it, forever.
func TestFaultAbortWhileACollectiveWaits(t *testing.T) {
	if os.Getenv(abortRankEnv) != "" {
		t.Skip("inside an MPI job")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range testutil.MPILaunchers(t) {
		cmd := l.Command(2, []string{abortRankEnv + "=1"}, exe, "-test.run=^TestAbortRank$", "-test.v")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Logf("%s: the job ended after %v", l.Name, time.Since(start).Round(time.Millisecond))
			if err == nil || !bytes.Contains(out.Bytes(), []byte("rank 1 aborts")) {
				t.Errorf("%s: %v, want a failed job after rank 1 aborted\n%s", l.Name, err, &out)
			}
		case <-time.After(time.Minute):
			stopLauncher(cmd, done)
			t.Fatalf("%s: the job still ran a minute after rank 1 aborted\n%s", l.Name, &out)
		}
	}
}

// stopLauncher ends a launcher that hung: SIGTERM, which it passes on to its ranks, then
// SIGKILL.
func stopLauncher(cmd *exec.Cmd, done <-chan error) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// TestAbortRank is one process of the job TestFaultAbortWhileACollectiveWaits launches: rank 1
// holds its MPI thread in a barrier rank 0 never enters, then aborts.
func TestAbortRank(t *testing.T) {
	if os.Getenv(abortRankEnv) == "" {
		t.Skip("runs only inside the MPI job that TestFaultAbortWhileACollectiveWaits launches")
	}
	c, err := Init()
	if err != nil {
		t.Fatal(err)
	}
	if c.Rank() == 0 {
		time.Sleep(2 * time.Minute)
		t.Fatal("rank 0 was not ended")
	}
	go c.Barrier()
	time.Sleep(200 * time.Millisecond) // the barrier holds the MPI thread
	fmt.Println("rank 1 aborts")
	c.Abort(3)
	os.Exit(3)
}
