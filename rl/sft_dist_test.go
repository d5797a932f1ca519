package rl

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/dist"
	"github.com/vkgrad/vkgrad/internal/testutil"
)

// sftDistSteps is how many steps the data-parallel comparison runs.
const sftDistSteps = 3

// sftDistHash trains the toy model with four micro-batches (over c's ranks when c is set) and
// returns a hash of its parameters.
func sftDistHash(t *testing.T, c *dist.Comm) string {
	t.Helper()
	cfg := DefaultSFTConfig()
	cfg.Steps, cfg.Batch, cfg.MicroBatch, cfg.LR, cfg.MinLR, cfg.EOS = sftDistSteps, 8, 2, 1e-2, 1e-2, toyEOS
	p := GPT2(toyModel(t, 5))
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
	if os.Getenv("VKGRAD_SFT_RANK_TEST") != "" {
		t.Skip("inside an MPI job")
	}
	want := sftDistHash(t, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range testutil.MPILaunchers(t) {
		for _, np := range []int{1, 2, 3} {
			dir := t.TempDir()
			out, err := l.Command(np, []string{"VKGRAD_SFT_RANK_TEST=1", "VKGRAD_SFT_OUT=" + dir}, exe,
				"-test.run=^TestSFTDataParallelRank$", "-test.v").CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("--- PASS: TestSFTDataParallelRank")) {
				t.Fatalf("%s -np %d: %v\n%s", l.Name, np, err, out)
			}
			for r := range np {
				got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d", r)))
				if err != nil {
					t.Fatalf("%s -np %d: rank %d wrote nothing: %v\n%s", l.Name, np, r, err, out)
				}
				if string(got) != want {
					t.Errorf("%s -np %d rank %d: parameters hash %s, one process %s", l.Name, np, r, got, want)
				}
			}
		}
	}
}

// TestSFTDataParallelRank is one rank of TestSFTDataParallelIsBitwiseEqual's jobs.
func TestSFTDataParallelRank(t *testing.T) {
	if os.Getenv("VKGRAD_SFT_RANK_TEST") == "" {
		t.Skip("runs only inside the MPI job of TestSFTDataParallelIsBitwiseEqual")
	}
	c, err := dist.Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := sftDistHash(t, c)
	if err := os.WriteFile(filepath.Join(os.Getenv("VKGRAD_SFT_OUT"), fmt.Sprintf("rank%d", c.Rank())), []byte(got), 0o644); err != nil {
		t.Fatal(err)
	}
}
