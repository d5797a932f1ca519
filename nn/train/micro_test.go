package train

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/mpi"
)

// microConfig is testConfig in K micro-batches of 2 sequences, read in corpus order so that
// K micro-batches hold the same sequences as one batch of 2K.
func microConfig(K int) Config {
	c := testConfig()
	c.Batch, c.MicroBatches, c.NoShuffle = 2, K, true
	return c
}

func trainSteps(t *testing.T, tr *Trainer, n int) []float32 {
	t.Helper()
	var losses []float32
	for range n {
		s, err := tr.TrainStep()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, s.Loss)
	}
	return losses
}

// TestMicroBatchesMatchOneBatch: 4 micro-batches of 2 sequences train like one batch of 8.
func TestMicroBatchesMatchOneBatch(t *testing.T) {
	one := microConfig(1)
	one.Batch = 8
	a, b := newTrainer(t, one), newTrainer(t, microConfig(4))
	la, lb := trainSteps(t, a, 4), trainSteps(t, b, 4)
	for i := range la {
		if d := math.Abs(float64(la[i] - lb[i])); d > 1e-5 {
			t.Errorf("step %d: loss %v in one batch, %v in micro-batches", i+1, la[i], lb[i])
		}
	}
	pa, _ := a.Model.Params().ToHost()
	pb, _ := b.Model.Params().ToHost()
	var worst float64
	for i := range pa {
		worst = max(worst, math.Abs(float64(pa[i]-pb[i])))
	}
	if worst > 1e-5 {
		t.Errorf("parameters differ by %g after 4 steps", worst)
	}
	if _, err := mpi.NewReducer(nil, 10, 0); err == nil {
		t.Error("0 micro-batches should be refused")
	}
}

// distSteps is how many steps the data-parallel comparison runs.
const distSteps = 3

// TestDataParallelIsBitwiseEqual trains with 4 micro-batches in one process, then under each
// installed MPI with 1, 2 and 3 ranks (3 ranks hold 2, 1 and 1 micro-batches), and requires
// the same parameters bit for bit on every rank.
func TestDataParallelIsBitwiseEqual(t *testing.T) {
	testutil.SkipInRankJob(t)
	tr := newTrainer(t, microConfig(4))
	trainSteps(t, tr, distSteps)
	p, _ := tr.Model.Params().ToHost()
	want := fmt.Sprintf("%016x", mpi.HashFloat32s(p))
	testutil.SameOnEveryRank(t, "TestDataParallelRank", want, 1, 2, 3)
}

// TestDataParallelRank is one rank of TestDataParallelIsBitwiseEqual's jobs.
func TestDataParallelRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestDataParallelIsBitwiseEqual")
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tr := newTrainer(t, microConfig(4))
	if err := tr.SetComm(c); err != nil {
		t.Fatal(err)
	}
	trainSteps(t, tr, distSteps)
	if err := tr.CheckReplicas(); err != nil {
		t.Fatal(err)
	}
	p, _ := tr.Model.Params().ToHost()
	testutil.WriteRankResult(t, c.Rank(), fmt.Sprintf("%016x", mpi.HashFloat32s(p)))
	if !strings.Contains(c.Library(), "MPI") {
		t.Errorf("library %q", c.Library())
	}
}
