package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestDescriptorSetsReused checks that a dispatch binding what an earlier dispatch bound (the
// same layout and buffer ranges) reuses its descriptor set, across submissions too; that new
// ranges and new layouts get sets of their own; and that results stay right throughout.
func TestDescriptorSetsReused(t *testing.T) {
	d := device(t)
	b := NewBackendOn(d)
	defer b.Close()
	const n = 4096
	x, y, z := backendtest.OnBackend(t, b, fill(n, 1), 0), backendtest.OnBackend(t, b, fill(n, 2), 1), backendtest.OnBackend(t, b, fill(n, 0), 2)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	writes := func(step string, want int, run func()) {
		t.Helper()
		w0 := d.RecordStats().DescriptorWrites
		run()
		if got := d.RecordStats().DescriptorWrites - w0; got != want {
			t.Errorf("%s: %d descriptor sets written, want %d", step, got, want)
		}
	}
	writes("first Add", 1, func() { b.Add(z, x, y) })
	writes("the same Add", 0, func() { b.Add(z, x, y) })
	if got := download(t, b, z); got[0] != 3 || got[n-1] != 3 {
		t.Fatalf("x + y = %g, %g; want 3", got[0], got[n-1])
	}
	// After the submission: new contents of x, the same set.
	if err := b.Upload(x, fill(n, 5)); err != nil {
		t.Fatal(err)
	}
	writes("Add after a submission", 0, func() { b.Add(z, x, y) })
	if got := download(t, b, z); got[0] != 7 || got[n-1] != 7 {
		t.Fatalf("x + y after an upload = %g, %g; want 7", got[0], got[n-1])
	}
	writes("Add into another range", 1, func() { b.Add(x, z, y) })
	writes("Mul over the Add's ranges", 1, func() { b.Mul(z, x, y) }) // another pipeline's layout
	if got := download(t, b, z); got[0] != 18 {
		t.Fatalf("(z + y) * y = %g, want 18", got[0])
	}
}

// TestDescriptorCacheTrimmed checks that the descriptor pools are reset and the cache emptied
// at a submission once it holds descriptorCacheSets sets, and that dispatches then write
// fresh sets that compute the right results.
func TestDescriptorCacheTrimmed(t *testing.T) {
	d := device(t)
	b := NewBackendOn(d)
	defer b.Close()
	x, y := backendtest.OnBackend(t, b, fill(100, 1), 0), backendtest.OnBackend(t, b, fill(100, 0), 0)
	b.Add(y, x, x)
	d.mu.Lock()
	d.rec.descSets = descriptorCacheSets // as if the cache were full
	d.mu.Unlock()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	cached, sets := len(d.rec.descCache), d.rec.descSets
	d.mu.Unlock()
	if cached != 0 || sets != 0 {
		t.Fatalf("after a submission with a full cache: %d cached sets, %d allocated; want 0, 0", cached, sets)
	}
	w0 := d.RecordStats().DescriptorWrites
	b.Add(y, y, x)
	if got := d.RecordStats().DescriptorWrites - w0; got != 1 {
		t.Errorf("Add after the trim wrote %d sets, want 1", got)
	}
	if got := download(t, b, y); got[0] != 3 || got[99] != 3 {
		t.Fatalf("x + x + x = %g, %g; want 3", got[0], got[99])
	}
}

// TestDescriptorSetsOfFreedBlocks frees a buffer in a block of its own and allocates another
// of the same size, which the driver may give the freed buffer's handle: the new buffer must
// get a set of its own, not the freed one's.
func TestDescriptorSetsOfFreedBlocks(t *testing.T) {
	d, _, err := OpenDevice(testDeviceSpec())
	requireVulkan(t, err)
	defer d.Close()
	d.LimitAllocations(1 << 20) // 1 MiB blocks: 800 KB gets a block of its own
	b := NewBackendOn(d)
	defer b.Close()
	const n = 200_000
	x := backendtest.OnBackend(t, b, fill(n, 1), 0)
	for round := range 3 {
		big, err := tensor.New(b, tensor.Float32, n)
		if err != nil {
			t.Fatal(err)
		}
		if st := big.Storage.(*storage); !st.buf.block.dedicated {
			t.Fatalf("a %d-byte buffer shares a block under a 1 MiB limit", 4*n)
		}
		b.Fill(big, float32(round))
		w0 := d.RecordStats().DescriptorWrites
		b.Add(big, big, x)
		if got := d.RecordStats().DescriptorWrites - w0; got != 1 {
			t.Errorf("round %d: Add into a new buffer wrote %d sets, want 1", round, got)
		}
		if got := download(t, b, big); got[0] != float32(round+1) || got[n-1] != float32(round+1) {
			t.Fatalf("round %d: %d + 1 = %g, %g", round, round, got[0], got[n-1])
		}
		b.Free(big.Storage)
	}
	// Drivers do reuse handles. Stand in a second block for a later one that got the handle
	// of x's block: binding it must write a set of its own.
	st := x.Storage.(*storage)
	alias := *st.buf.block
	other := &Buffer{block: &alias, off: st.buf.off, size: st.buf.size, alloc: st.buf.alloc, label: "alias"}
	k := Kernel{Shader: "fill", Bindings: 1, Push: 3, Local: [3]uint32{b.wg, 1, 1}}
	for i, buf := range []*Buffer{st.buf, st.buf, other} {
		w, err := d.Window(buf, x.Offset, n)
		if err != nil {
			t.Fatal(err)
		}
		w0 := d.RecordStats().DescriptorWrites
		push := fillPush{N: n, Off: w.First}
		if err := d.Dispatch(k, [3]uint32{1, 1, 1}, pushOf(&push), Arg{W: w, Write: true}); err != nil {
			t.Fatal(err)
		}
		want := []int{1, 0, 1}[i]
		if got := d.RecordStats().DescriptorWrites - w0; got != want {
			t.Errorf("fill %d: %d sets written, want %d", i, got, want)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Instance().ValidationMessages() {
		t.Errorf("validation: %s", m)
	}
}

func fill(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}
