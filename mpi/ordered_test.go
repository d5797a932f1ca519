package mpi

import (
	"math"
	"testing"
)

func TestHeldCoversEveryMicroBatchOnceInOrder(t *testing.T) {
	for K := 1; K <= 9; K++ {
		for P := 1; P <= K; P++ {
			next := 0
			for r := range P {
				first, n := Held(r, K, P)
				if first != next || n < K/P || n > K/P+1 {
					t.Fatalf("K=%d P=%d rank %d holds %d..+%d, want to start at %d with %d or %d", K, P, r, first, n, next, K/P, K/P+1)
				}
				next += n
			}
			if next != K {
				t.Fatalf("K=%d P=%d: ranks hold %d micro-batches", K, P, next)
			}
		}
	}
}

// microBatches makes K vectors whose magnitudes differ by orders, so that the order of the
// additions shows in the bits of the sum.
func microBatches(K, n int) [][]float32 {
	xs := make([][]float32, K)
	seed := uint32(12345)
	for k := range xs {
		xs[k] = make([]float32, n)
		for i := range xs[k] {
			seed = seed*1664525 + 1013904223
			u := float32(seed>>8)/float32(1<<24) - 0.5
			xs[k][i] = u * float32(math.Pow(10, float64((k+i)%7-3)))
		}
	}
	return xs
}

func TestLocalReducerAddsInMicroBatchOrder(t *testing.T) {
	const K, n = 5, 37
	xs := microBatches(K, n)
	r, err := NewReducer(nil, n, K)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := r.Sum(got, xs); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		want := xs[0][i]
		for k := 1; k < K; k++ {
			want += xs[k][i]
		}
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("element %d: %v, want %v", i, got[i], want)
		}
	}
	// Another grouping of the same additions gives other bits for some element: the test
	// data can tell an order from another.
	differs := false
	for i := range got {
		other := (xs[3][i] + xs[4][i]) + (xs[0][i] + xs[1][i] + xs[2][i])
		differs = differs || math.Float32bits(other) != math.Float32bits(got[i])
	}
	if !differs {
		t.Fatal("the test vectors do not tell summation orders apart")
	}
	if err := r.Sum(got, xs[:4]); err == nil {
		t.Error("Sum with 4 of 5 micro-batches on one process should fail")
	}
	if _, err := NewReducer(&Comm{size: 4}, n, 3); err == nil {
		t.Error("3 micro-batches over 4 ranks should be refused")
	}
}

func TestLaunchEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if Launched(env()) {
		t.Error("no launcher variables: not launched")
	}
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"} {
		if !Launched(env(k, "2")) {
			t.Errorf("%s set: launched", k)
		}
	}
	if got := LocalRank(env("OMPI_COMM_WORLD_LOCAL_RANK", "3")); got != 3 {
		t.Errorf("Open MPI local rank 3: got %d", got)
	}
	if got := LocalRank(env("MPI_LOCALRANKID", "1")); got != 1 {
		t.Errorf("MPICH local rank 1: got %d", got)
	}
	if got := candidates(env("PMI_SIZE", "2"))[0].name; got != "MPICH" {
		t.Errorf("under Hydra (PMI_SIZE) try MPICH first, got %s", got)
	}
	if got := candidates(env("OMPI_COMM_WORLD_SIZE", "2", "PMI_SIZE", "2"))[0].name; got != "Open MPI" {
		t.Errorf("under Open MPI's mpirun try Open MPI first, got %s", got)
	}
}

// bucketCuts are ways to cut n elements into ranges, in the order they are reduced: one range,
// ranges shorter than the rank count (and an empty one), and ranges out of order as a backward
// pass finishes them (the last layer first).
func bucketCuts(n int) [][][2]int {
	return [][][2]int{
		{{0, n}},
		{{0, 1}, {1, 3}, {3, 3}, {3, n}},
		{{n - 7, n}, {n / 2, n - 7}, {10, n / 2}, {0, 10}},
		{{n / 3, 2 * n / 3}, {2 * n / 3, n}, {0, n / 3}},
	}
}

// sumByBuckets reduces xs (this rank's held vectors) with one Start per range, then waits.
func sumByBuckets(r *Reducer, held [][]float32, n int, cut [][2]int, scale float32) ([]float32, error) {
	got := make([]float32, n)
	for _, c := range cut {
		if err := r.Start(got, held, c[0], c[1], scale); err != nil {
			return nil, err
		}
	}
	return got, r.Wait()
}

// scaledSum is the one-shot sum in micro-batch order, then times scale.
func scaledSum(xs [][]float32, n int, scale float32) []float32 {
	want := make([]float32, n)
	sumInOrder(want, xs)
	for i := range want {
		want[i] *= scale
	}
	return want
}

func firstBitDifference(got, want []float32) int {
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

func TestLocalBucketedSumEqualsOneSum(t *testing.T) {
	const n = 101
	for _, K := range []int{1, 2, 5} {
		xs := microBatches(K, n)
		r, err := NewReducer(nil, n, K)
		if err != nil {
			t.Fatal(err)
		}
		for _, scale := range []float32{1, 1 / float32(K), 0.3} {
			want := scaledSum(xs, n, scale)
			for ci, cut := range bucketCuts(n) {
				got, err := sumByBuckets(r, xs, n, cut, scale)
				if err != nil {
					t.Fatal(err)
				}
				if i := firstBitDifference(got, want); i >= 0 {
					t.Fatalf("K=%d scale %v cut %d: element %d is %v, the one-shot sum %v", K, scale, ci, i, got[i], want[i])
				}
			}
		}
	}
	r, _ := NewReducer(nil, n, 2)
	if err := r.Start(make([]float32, n), microBatches(2, n), 5, n+1, 1); err == nil {
		t.Error("a range past the end should be refused")
	}
}
