package main

import (
	"fmt"
	"io"

	"github.com/vkgrad/vkgrad/internal/cluster"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/rl"
)

// joined is the job this process joined, nil outside one; exitCode leaves it when the command
// returns.
var joined *cluster.Member

// joinCluster initialises MPI when the process was started by an MPI launcher or with
// --distributed; otherwise it returns nil and nothing changes.
func (c *commonFlags) joinCluster() (*cluster.Member, error) {
	cl, err := cluster.Join(c.distributed)
	if err != nil {
		return nil, fmt.Errorf("--distributed: %w", err)
	}
	if cl == nil {
		return nil, nil
	}
	joined = cl
	// Ranks sharing a machine share its cores, and each rank its own device.
	if c.threads == 0 {
		c.threads = cl.Cores()
	}
	if c.device == "auto" {
		c.device = cl.Device()
	}
	return cl, nil
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
	if !cl.Main() {
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
	r.log.Info().Msg(r.cluster.Describe())
	return tr.SetComm(r.cluster.Comm())
}
