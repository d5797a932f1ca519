package gradsum

import (
	"slices"
	"testing"

	"github.com/vkgrad/vkgrad/mpi"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// filled is the sum of 3 micro-batches of 4 values in one process, micro-batch i's slot holding
// (i+1)*(1, 2, 3) then 1e8, 4 and 4 as the last values: float32 rounding shows the order of
// their additions.
func filled(t *testing.T) *Accumulator {
	a, err := New(nil, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	first, n := a.Held()
	if first != 0 || n != 3 {
		t.Fatalf("Held() = %d, %d, want 0, 3 in one process", first, n)
	}
	for i := range n {
		for j := range a.Slot(i) {
			a.Slot(i)[j] = float32(i+1) * float32(j+1)
		}
	}
	a.Slot(0)[3], a.Slot(1)[3], a.Slot(2)[3] = 1e8, 4, 4
	return a
}

// deviceVector is a vector of the given pieces on the CPU backend.
func deviceVector(t *testing.T, pieces ...int) *tensor.Flat {
	f, err := tensor.NewFlat(cpu.New(), pieces)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func host(t *testing.T, f *tensor.Flat) []float32 {
	v, err := f.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReduceIntoAddsInMicroBatchOrder(t *testing.T) {
	a := filled(t)
	dst := deviceVector(t, 1, 3)
	var stats mpi.ReduceStats
	if err := a.ReduceInto(dst, &stats); err != nil {
		t.Fatal(err)
	}
	got := host(t, dst)
	// In order, 1e8+4 rounds back to 1e8 (an ulp is 8 there) twice; 4+4 first would give 1e8+8.
	if want := []float32{6, 12, 18, 1e8}; !slices.Equal(got, want) {
		t.Fatalf("sum %v, want %v", got, want)
	}
	if stats.BytesSent != 0 {
		t.Errorf("one process sent %d bytes", stats.BytesSent)
	}
}

func TestStartScalesTheRangesItSums(t *testing.T) {
	a := filled(t)
	if err := a.Start(0, 2, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(2, 4, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	dst := deviceVector(t, 4)
	if err := a.UploadSum(dst); err != nil {
		t.Fatal(err)
	}
	if got, want := host(t, dst), []float32{3, 6, 9, 5e7}; !slices.Equal(got, want) {
		t.Fatalf("scaled sum %v, want %v", got, want)
	}
}

func TestNilAccumulatorDoesNothing(t *testing.T) {
	var a *Accumulator
	if a.Slot(0) != nil {
		t.Error("a nil accumulator has a slot")
	}
	if err := a.ReduceInto(nil, nil); err != nil {
		t.Error(err)
	}
}
