package main

import (
	"fmt"
	"io"

	"github.com/vkgrad/vkgrad/internal/cluster"
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

// joinRunCluster makes a fine-tuning command one rank of an MPI job when launched under one
// (their micro-batches, and the RL commands' groups, spread over the ranks); rank 0 alone
// speaks and writes the run's files.
func joinRunCluster(c *commonFlags) (*cluster.Member, error) {
	cl, err := c.joinCluster()
	if err != nil || cl == nil {
		return nil, err
	}
	if !cl.Main() {
		c.quiet = true
		stdout = io.Discard
	}
	return cl, nil
}
