package tensor_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// capped is a CPU backend whose allocations hold at most n floats, as a GPU driver bounds them.
type capped struct {
	tensor.Backend
	n int
}

func (c capped) MaxAllocElems() int { return c.n }

// Pieces are packed in order into allocations of at most the cap, never split; views, ranges
// and transfers see one logical vector.
func TestFlatPlacesPiecesWhole(t *testing.T) {
	be := capped{cpu.New(), 10}
	f, err := tensor.NewFlat(be, []int{4, 4, 3, 10, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	var sizes, starts []int
	for i, p := range f.Parts() {
		sizes, starts = append(sizes, p.Numel()), append(starts, f.PartStart(i))
	}
	if !slices.Equal(sizes, []int{8, 3, 10, 2}) || !slices.Equal(starts, []int{0, 8, 11, 21}) || f.Len() != 23 {
		t.Fatalf("parts of %v starting at %v (%d floats), want [8 3 10 2] at [0 8 11 21] (23)", sizes, starts, f.Len())
	}
	v := make([]float32, f.Len())
	for i := range v {
		v[i] = float32(i)
	}
	if err := f.Upload(v); err != nil {
		t.Fatal(err)
	}
	got, err := f.ToHost()
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if x := cpu.Float32s(f.View(11, 2, 5)); x[0] != 11 || len(x) != 10 {
		t.Errorf("view of the fourth piece starts at %v (%d floats), want 11 (10)", x[0], len(x))
	}
	var covered []float32
	for _, r := range f.Range(6, 8) {
		covered = append(covered, cpu.Float32s(r)...)
	}
	if !slices.Equal(covered, v[6:14]) {
		t.Errorf("range [6, 14): %v", covered)
	}
	like, err := tensor.NewFlatLike(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(like.Parts()) != len(f.Parts()) || like.Len() != f.Len() || like.Backend() != tensor.Backend(be) {
		t.Errorf("NewFlatLike: %d parts of %d floats on %v", len(like.Parts()), like.Len(), like.Backend())
	}
	if err := f.Upload(v[1:]); err == nil {
		t.Error("an upload of the wrong length was accepted")
	}
	if _, err := tensor.NewFlat(be, []int{4, 11}); err == nil || !strings.Contains(err.Error(), "piece 1, 44 bytes, exceeds the device's largest allocation, 40 bytes") {
		t.Errorf("a piece beyond the cap: %v", err)
	}
}

// Without an allocation limit the vector is one allocation, as a plain tensor.
func TestFlatUnboundedIsOneAllocation(t *testing.T) {
	f, err := tensor.NewFlat(cpu.New(), []int{1 << 10, 3, 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Parts()) != 1 || f.Parts()[0].Numel() != f.Len() {
		t.Errorf("%d parts, want 1", len(f.Parts()))
	}
}

// budgeted is a CPU backend with a fixed memory budget.
type budgeted struct {
	tensor.Backend
	n uint64
}

func (b budgeted) MemoryBudget() (uint64, string) { return b.n, "a test budget" }

// A request beyond the budget is an error that says both sizes; one within it, or where the
// budget is unknown (0), is not.
func TestCheckFits(t *testing.T) {
	be := budgeted{cpu.New(), 1000}
	err := tensor.CheckFits(be, 2048, "the thing")
	if err == nil || err.Error() != "the thing needs 2.0 KiB, and cpu has 1000 bytes available (a test budget)" {
		t.Errorf("2048 bytes of 1000: %v", err)
	}
	if err := tensor.CheckFits(be, 1000, "the thing"); err != nil {
		t.Errorf("1000 bytes of 1000: %v", err)
	}
	if err := tensor.CheckFits(budgeted{cpu.New(), 0}, 1<<40, "the thing"); err != nil {
		t.Errorf("an unknown budget: %v", err)
	}
}
