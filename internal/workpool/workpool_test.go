package workpool

import (
	"sync/atomic"
	"testing"

	"github.com/vkgrad/vkgrad/internal/race"
)

// countJob claims pieces from a counter and records who computed each one.
type countJob struct {
	next   atomic.Int64
	pieces int64
	done   []atomic.Int32
	byW    []atomic.Int32
	inner  int // when > 0, each piece runs a nested Run with this many helpers
}

func newCountJob(pieces, workers int) *countJob {
	return &countJob{pieces: int64(pieces), done: make([]atomic.Int32, pieces), byW: make([]atomic.Int32, workers)}
}

func (j *countJob) Work(w int) {
	for {
		i := j.next.Add(1) - 1
		if i >= j.pieces {
			return
		}
		if j.inner > 0 {
			Run(newCountJob(8, j.inner+1), j.inner)
		}
		j.done[i].Add(1)
		j.byW[w].Add(1)
	}
}

func TestEveryPieceOnce(t *testing.T) {
	for _, helpers := range []int{0, 1, 3, 7} {
		for rep := 0; rep < 50; rep++ {
			j := newCountJob(1000, helpers+1)
			Run(j, helpers)
			for i := range j.done {
				if n := j.done[i].Load(); n != 1 {
					t.Fatalf("helpers=%d: piece %d computed %d times", helpers, i, n)
				}
			}
			total := int32(0)
			for w := range j.byW {
				total += j.byW[w].Load()
			}
			if total != 1000 {
				t.Fatalf("helpers=%d: %d pieces counted by worker index, want 1000", helpers, total)
			}
		}
	}
	if n := Helpers(); n > 7 {
		t.Fatalf("%d helpers started; no Run asked for more than 7", n)
	}
}

// A job whose pieces run their own parallel jobs must finish even when every helper is busy
// with the outer job: the inner caller then does its pieces alone.
func TestNestedRunFinishes(t *testing.T) {
	j := newCountJob(64, 4)
	j.inner = 3
	Run(j, 3)
	for i := range j.done {
		if n := j.done[i].Load(); n != 1 {
			t.Fatalf("piece %d computed %d times", i, n)
		}
	}
}

func TestRunAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	j := newCountJob(256, 4)
	Run(j, 3) // start the helpers and fill the free lists
	allocs := testing.AllocsPerRun(200, func() {
		j.next.Store(0)
		Run(j, 3)
	})
	if allocs != 0 {
		t.Fatalf("Run allocates %.1f times per call", allocs)
	}
}
