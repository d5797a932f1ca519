// Package cluster is a vkgrad process's place in a data-parallel MPI job.
//
// A job has one process per device, launched by mpirun, mpiexec or srun.
//
// [Join] makes the process a [Member] of the job when a launcher started it (or when asked);
// outside a job it returns nil, and every method of a nil *Member answers as a lone process
// does, so commands call them without checking. Rank 0 alone writes the run's files
// ([Member.Main]); the ranks leave a step loop together ([Member.AnyStop]) and leave the job
// together ([Member.Leave]), aborting it after an error so that no rank waits forever.
package cluster

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/vk"
)

// Member is this process's place in a job. A nil *Member is a single process.
type Member struct {
	comm                 *mpi.Comm
	localRank, localSize int
}

// Join initialises MPI when an MPI launcher started the process or force is set; otherwise it
// returns nil and nothing changes.
func Join(force bool) (*Member, error) {
	if !force && !mpi.Launched(os.Getenv) {
		return nil, nil
	}
	comm, err := mpi.Init()
	if err != nil {
		return nil, err
	}
	return &Member{comm: comm, localRank: mpi.LocalRank(os.Getenv), localSize: mpi.LocalSize(os.Getenv)}, nil
}

// Cores is the number of CPU threads this rank should use: ranks sharing a machine share its
// cores.
func (m *Member) Cores() int {
	if m == nil {
		return runtime.NumCPU()
	}
	return max(1, runtime.NumCPU()/m.localSize)
}

// Device picks the local rank's device for --device auto: rank i of a machine takes its i-th
// GPU (round robin), or the CPU when the machine has none.
func (m *Member) Device() string {
	devs, err := vk.Devices()
	if err != nil {
		return "cpu"
	}
	localRank := 0
	if m != nil {
		localRank = m.localRank
	}
	return deviceFor(devs, localRank)
}

// deviceFor is the GPU among devs that local rank localRank takes, or "cpu" without one.
func deviceFor(devs []vk.DeviceInfo, localRank int) string {
	var gpus []int
	for _, d := range devs {
		if d.Type == vk.DeviceDiscrete || d.Type == vk.DeviceIntegrated {
			gpus = append(gpus, d.Index)
		}
	}
	if len(gpus) == 0 {
		return "cpu"
	}
	return fmt.Sprintf("vulkan:%d", gpus[localRank%len(gpus)])
}

// Main reports whether this process writes the run's files and logs: rank 0, or a lone process.
func (m *Member) Main() bool { return m == nil || m.comm.Rank() == 0 }

// Comm is the job's communicator, nil for a lone process.
func (m *Member) Comm() *mpi.Comm {
	if m == nil {
		return nil
	}
	return m.comm
}

// AnyStop returns true on every rank when any rank asks to stop, so all leave the step loop
// at the same step (a rank that left alone would leave the others waiting in a collective).
func (m *Member) AnyStop(local bool) (bool, error) {
	if m == nil {
		return local, nil
	}
	flag := []int64{0}
	if local {
		flag[0] = 1
	}
	if err := m.comm.SumInt64(flag); err != nil {
		return false, err
	}
	return flag[0] > 0, nil
}

// CheckSpread refuses a step of k micro-batches (counted as flag says) that cannot give every
// rank one. Commands check it before rank 0 makes the run directory: every rank fails alike,
// and the first to abort the job could end rank 0 before it removed what it made.
func (m *Member) CheckSpread(flag string, k int) error {
	if m == nil || k >= m.comm.Size() {
		return nil
	}
	return fmt.Errorf("%s: %d micro-batches cannot be spread over %d ranks; use at least %d", flag, k, m.comm.Size(), m.comm.Size())
}

// Barrier waits for every rank (rank 0 writing a checkpoint, say); nothing for one process.
func (m *Member) Barrier() error {
	if m == nil {
		return nil
	}
	return m.comm.Barrier()
}

// peerAbortDelay is how long a rank other than 0 that failed waits before it aborts the job.
const peerAbortDelay = 2 * time.Second

// Leave finalises MPI after a command that succeeded. After one that failed (its error
// already printed) it aborts the job when there are other ranks: they may be waiting for this
// one in a collective that would never end, and MPI_Finalize would wait for them in turn.
// Rank 0 aborts at once, the others after peerAbortDelay: a failure every rank shares then
// ends the job once, from rank 0, after rank 0 removed the run files it made.
func (m *Member) Leave(failed bool) error {
	if m == nil {
		return nil
	}
	if failed && m.comm.Size() > 1 {
		if !m.Main() {
			time.Sleep(peerAbortDelay)
		}
		m.comm.Abort(1) // returns only if MPI could not end the job; exiting non-zero then does
		return nil
	}
	return m.comm.Close()
}

// AgreedStop marks the error of a stop every rank of the job agreed on (an interrupt, through
// AnyStop): no rank waits in a collective then, so the job finalises rather than aborts.
type AgreedStop struct{ Err error }

// Error is the stop's message, unchanged.
func (e AgreedStop) Error() string { return e.Err.Error() }

// Unwrap returns the stop's error.
func (e AgreedStop) Unwrap() error { return e.Err }

// ErrorPrefix names the rank in a job of several, whose ranks may each print their error.
func (m *Member) ErrorPrefix() string {
	if m == nil || m.comm.Size() == 1 {
		return ""
	}
	return fmt.Sprintf("rank %d of %d: ", m.comm.Rank(), m.comm.Size())
}

// Describe is the log line of this process's place in the job.
func (m *Member) Describe() string {
	return fmt.Sprintf("rank %d of %d (local %d of %d) on %s", m.comm.Rank(), m.comm.Size(), m.localRank, m.localSize, m.comm.Library())
}
