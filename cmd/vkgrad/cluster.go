package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/rl"
	"github.com/vkgrad/vkgrad/vk"
)

// cluster is this process's place in a data-parallel job: one process per device, launched by
// mpirun, mpiexec or srun. A nil *cluster is a single process.
type cluster struct {
	comm                 *mpi.Comm
	localRank, localSize int
}

// joinCluster initialises MPI when the process was started by an MPI launcher or with
// --distributed; otherwise it returns nil and nothing changes.
func (c *commonFlags) joinCluster() (*cluster, error) {
	if !c.distributed && !mpi.Launched(os.Getenv) {
		return nil, nil
	}
	comm, err := mpi.Init()
	if err != nil {
		return nil, fmt.Errorf("--distributed: %w", err)
	}
	cl := &cluster{comm: comm, localRank: mpi.LocalRank(os.Getenv), localSize: mpi.LocalSize(os.Getenv)}
	joined = cl
	// Ranks sharing a machine share its cores, and each rank its own device.
	if c.threads == 0 {
		c.threads = max(1, runtime.NumCPU()/cl.localSize)
	}
	if c.device == "auto" {
		c.device = cl.deviceFor()
	}
	return cl, nil
}

// deviceFor picks the local rank's GPU (rank i of a machine takes its i-th GPU, round robin),
// or the CPU when the machine has no GPU.
func (cl *cluster) deviceFor() string {
	devs, err := vk.Devices()
	if err != nil {
		return "cpu"
	}
	var gpus []int
	for _, d := range devs {
		if d.Type == vk.DeviceDiscrete || d.Type == vk.DeviceIntegrated {
			gpus = append(gpus, d.Index)
		}
	}
	if len(gpus) == 0 {
		return "cpu"
	}
	return fmt.Sprintf("vulkan:%d", gpus[cl.localRank%len(gpus)])
}

// main reports whether this process writes the run's files and logs: rank 0, or a lone process.
func (cl *cluster) main() bool { return cl == nil || cl.comm.Rank() == 0 }

// mpi is the job's communicator, nil for a lone process.
func (cl *cluster) mpi() *mpi.Comm {
	if cl == nil {
		return nil
	}
	return cl.comm
}

// anyStop returns true on every rank when any rank asks to stop, so all leave the step loop
// at the same step (a rank that left alone would leave the others waiting in a collective).
func (cl *cluster) anyStop(local bool) (bool, error) {
	if cl == nil {
		return local, nil
	}
	flag := []int64{0}
	if local {
		flag[0] = 1
	}
	if err := cl.comm.SumInt64(flag); err != nil {
		return false, err
	}
	return flag[0] > 0, nil
}

// checkSpread refuses a step of k micro-batches (counted as flag says) that cannot give every
// rank one. Commands check it before rank 0 makes the run directory: every rank fails alike,
// and the first to abort the job could end rank 0 before it removed what it made.
func (cl *cluster) checkSpread(flag string, k int) error {
	if cl == nil || k >= cl.comm.Size() {
		return nil
	}
	return fmt.Errorf("%s: %d micro-batches cannot be spread over %d ranks; use at least %d", flag, k, cl.comm.Size(), cl.comm.Size())
}

// barrier waits for every rank (rank 0 writing a checkpoint, say); nothing for one process.
func (cl *cluster) barrier() error {
	if cl == nil {
		return nil
	}
	return cl.comm.Barrier()
}

// joined is the job this process joined, nil outside one; leave ends the process's part in it
// when the command returns.
var joined *cluster

// peerAbortDelay is how long a rank other than 0 that failed waits before it aborts the job.
const peerAbortDelay = 2 * time.Second

// leave finalises MPI after a command that succeeded. After one that failed (its error
// already printed) it aborts the job when there are other ranks: they may be waiting for this
// one in a collective that would never end, and MPI_Finalize would wait for them in turn.
// Rank 0 aborts at once, the others after peerAbortDelay: a failure every rank shares then
// ends the job once, from rank 0, after rank 0 removed the run files it made.
func (cl *cluster) leave(failed bool) error {
	if cl == nil {
		return nil
	}
	if failed && cl.comm.Size() > 1 {
		if !cl.main() {
			time.Sleep(peerAbortDelay)
		}
		cl.comm.Abort(1) // returns only if MPI could not end the job; exiting non-zero then does
		return nil
	}
	return cl.comm.Close()
}

// agreedStop marks the error of a stop every rank of the job agreed on (an interrupt, through
// anyStop): no rank waits in a collective then, so the job finalises rather than aborts.
type agreedStop struct{ error }

func (e agreedStop) Unwrap() error { return e.error }

// errorPrefix names the rank in a job of several, whose ranks may each print their error.
func (cl *cluster) errorPrefix() string {
	if cl == nil || cl.comm.Size() == 1 {
		return ""
	}
	return fmt.Sprintf("rank %d of %d: ", cl.comm.Rank(), cl.comm.Size())
}

// describe is the log line of this process's place in the job.
func (cl *cluster) describe() string {
	return fmt.Sprintf("rank %d of %d (local %d of %d) on %s", cl.comm.Rank(), cl.comm.Size(), cl.localRank, cl.localSize, cl.comm.Library())
}

// joinCluster makes a fine-tuning command one rank of an MPI job when launched under one (their
// micro-batches, and the RL commands' groups, spread over the ranks); rank 0 alone speaks and
// writes the run's files.
func (r *rlRun) joinCluster(command string) error {
	cl, err := r.common.joinCluster()
	if err != nil || cl == nil {
		return err
	}
	r.cluster = cl
	if !cl.main() {
		r.common.quiet = true
		stdout = io.Discard
	}
	return nil
}

// spreadSteps makes an RL run's steps spreadable over ranks under MPI (rl.TrainConfig.Spread);
// a spread run stays spread when resumed, on any number of ranks or in one process.
func (r *rlRun) spreadSteps(cfg *rl.TrainConfig) {
	if r.cluster != nil && r.resumed != nil && !cfg.Spread {
		r.log.Warn().Msg("the run was started in one process: from here its steps are spread over the ranks, sampled from other streams than it would have been")
	}
	cfg.Spread = cfg.Spread || r.cluster != nil
}

// joinTrainer spreads an RL trainer over the job's ranks (nothing in one process).
func (r *rlRun) joinTrainer(tr interface{ SetComm(*mpi.Comm) error }) error {
	if r.cluster == nil {
		return nil
	}
	r.log.Info().Msg(r.cluster.describe())
	return tr.SetComm(r.cluster.comm)
}
