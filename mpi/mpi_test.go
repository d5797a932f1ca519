package mpi

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
)

// TestMPI runs TestMPIRank under each installed MPI with 1 to 4 processes, and checks that
// every run reduced to the same bits. Without MPI it skips, unless VKGRAD_REQUIRE_MPI=1.
func TestMPI(t *testing.T) {
	if os.Getenv("VKGRAD_DIST_RANK_TEST") != "" {
		t.Skip("inside an MPI job")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range testutil.MPILaunchers(t) {
		t.Run(l.Name, func(t *testing.T) {
			var first string
			for _, np := range []int{1, 2, 3, 4} {
				dir := t.TempDir()
				cmd := l.Command(np, []string{"VKGRAD_DIST_RANK_TEST=1", "VKGRAD_DIST_OUT=" + dir}, exe, "-test.run=^TestMPIRank$", "-test.v")
				out, err := cmd.CombinedOutput()
				if err != nil || bytes.Contains(out, []byte("--- FAIL")) || !bytes.Contains(out, []byte("--- PASS: TestMPIRank")) {
					t.Fatalf("%s -np %d: %v\n%s", l.Name, np, err, out)
				}
				for r := range np {
					b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d", r)))
					if err != nil {
						t.Fatalf("-np %d: rank %d wrote nothing: %v\n%s", np, r, err, out)
					}
					if first == "" {
						first = string(b)
					}
					if string(b) != first {
						t.Errorf("-np %d rank %d reduced to %s, -np 1 to %s", np, r, b, first)
					}
				}
			}
		})
	}
}

// TestMPIRank is one process of the job TestMPI launches.
func TestMPIRank(t *testing.T) {
	if os.Getenv("VKGRAD_DIST_RANK_TEST") == "" {
		t.Skip("runs only inside the MPI job that TestMPI launches")
	}
	c, err := Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rank, size := c.Rank(), c.Size()
	t.Logf("rank %d of %d on %s", rank, size, c.Library())

	h := fnv.New64a()
	for _, K := range []int{4, 5, 8} {
		const n = 1001
		xs := microBatches(K, n)
		want := make([]float32, n)
		sumInOrder(want, xs)
		r, err := NewReducer(c, n, K)
		if err != nil {
			t.Fatal(err)
		}
		first, cnt := r.Held()
		got := make([]float32, n)
		for range 2 { // twice: the buffers are reused
			if err := r.Sum(got, xs[first:first+cnt]); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("K=%d: element %d is %v, the in-order sum %v", K, i, got[i], want[i])
				}
			}
		}
		for _, v := range got {
			fmt.Fprintf(h, "%08x", math.Float32bits(v))
		}
	}

	ints := []int64{int64(rank) + 1, 1 << 40}
	if err := c.SumInt64(ints); err != nil {
		t.Fatal(err)
	}
	if want := int64(size * (size + 1) / 2); ints[0] != want || ints[1] != int64(size)<<40 {
		t.Errorf("SumInt64 = %v, want [%d %d]", ints, want, int64(size)<<40)
	}
	sums, err := c.SumFloat64([]float64{0.1 * float64(rank+1), 1})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for r := range size {
		want += 0.1 * float64(r+1)
	}
	if sums[0] != want || sums[1] != float64(size) {
		t.Errorf("SumFloat64 = %v, want [%v %d] added in rank order", sums, want, size)
	}

	msg := []byte("from rank 0....")
	if rank != 0 {
		msg = make([]byte, len(msg))
	}
	if err := c.Broadcast(msg, 0); err != nil || string(msg) != "from rank 0...." {
		t.Errorf("Broadcast: %q, %v", msg, err)
	}
	// Rank r sends r bytes of value r (rank 0 none).
	parts, err := c.GatherBytes(bytes.Repeat([]byte{byte(rank)}, rank))
	if err != nil {
		t.Fatal(err)
	}
	for r, p := range parts {
		if !bytes.Equal(p, bytes.Repeat([]byte{byte(r)}, r)) {
			t.Errorf("GatherBytes: rank %d's part is %v", r, p)
		}
	}
	if err := c.CheckSame("parameters", 42); err != nil {
		t.Errorf("equal values: %v", err)
	}
	if size > 1 {
		err := c.CheckSame("parameters", uint64(rank/(size-1))) // the last rank differs
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ranks [%d]", size-1)) {
			t.Errorf("CheckSame with the last rank different: %v", err)
		}
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(os.Getenv("VKGRAD_DIST_OUT"), fmt.Sprintf("rank%d", rank))
	if err := os.WriteFile(out, fmt.Appendf(nil, "%016x", h.Sum64()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMPIBucketedSum runs TestMPIBucketedSumRank under each installed MPI with 1 to 4 ranks:
// every rank must reduce every cut of the vectors into ranges to the one-shot sum's bits.
func TestMPIBucketedSum(t *testing.T) {
	testutil.SkipInRankJob(t)
	testutil.SameOnEveryRank(t, "TestMPIBucketedSumRank", "ok", 1, 2, 3, 4)
}

// TestMPIBucketedSumRank is one rank of TestMPIBucketedSum's jobs.
func TestMPIBucketedSumRank(t *testing.T) {
	testutil.RankJobOnly(t, "TestMPIBucketedSum")
	c, err := Init()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 1001
	for _, K := range []int{4, 5, 8} {
		xs := microBatches(K, n)
		r, err := NewReducer(c, n, K)
		if err != nil {
			t.Fatal(err)
		}
		first, cnt := r.Held()
		for _, scale := range []float32{1, 1 / float32(K)} {
			want := scaledSum(xs, n, scale)
			for ci, cut := range bucketCuts(n) {
				before := r.Stats().BytesSent
				got, err := sumByBuckets(r, xs[first:first+cnt], n, cut, scale)
				if err != nil {
					t.Fatal(err)
				}
				if i := firstBitDifference(got, want); i >= 0 {
					t.Fatalf("K=%d scale %v cut %d on %d ranks: element %d is %v, the one-shot sum %v", K, scale, ci, c.Size(), i, got[i], want[i])
				}
				if c.Size() > 1 && r.Stats().BytesSent == before {
					t.Errorf("K=%d cut %d: no bytes counted", K, ci)
				}
			}
		}
	}
	testutil.WriteRankResult(t, c.Rank(), "ok")
}
