package rl

import (
	"fmt"
	"hash/fnv"
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/nn"
)

// sftDistSteps is how many steps the data-parallel comparison runs.
const sftDistSteps = 3

// sftDistHash trains the toy model with four micro-batches (over c's ranks when c is set) and
// returns a hash of its parameters.
func sftDistHash(t *testing.T, c *mpi.Comm) string {
	t.Helper()
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.MicroBatch, cfg.LR, cfg.MinLR, cfg.EOS = sftDistSteps, 8, 2, 1e-2, 1e-2, toyEOS
	p := nn.GPT2(toyModel(t, 5))
	tr, err := NewSFTTrainer(p, toy, toyPrompts(false), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		if err := tr.SetComm(c); err != nil {
			t.Fatal(err)
		}
	}
	for range sftDistSteps {
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	params, err := paramsToHost(p)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	for _, v := range params {
		fmt.Fprintf(h, "%08x", math.Float32bits(v))
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Supervised training spread over 1, 2 and 3 ranks of each installed MPI (3 ranks hold 2, 1
// and 1 of the 4 micro-batches) ends with the parameters of one process, bit for bit.
func TestSFTDataParallelIsBitwiseEqual(t *testing.T) {
	testutil.SkipInRankJob(t)
	want := sftDistHash(t, nil)
	testutil.SameOnEveryRank(t, "TestSFTDataParallelRank", want, 1, 2, 3)
}

// TestSFTDataParallelRank is one rank of TestSFTDataParallelIsBitwiseEqual's jobs.
func TestSFTDataParallelRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestSFTDataParallelIsBitwiseEqual")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.WriteRankResult(t, c.Rank(), sftDistHash(t, c))
}
