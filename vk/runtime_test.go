package vk

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/internal/sysinfo"
	"github.com/vkgrad/vkgrad/tensor"
)

func TestDevicesReportLimits(t *testing.T) {
	devs, err := Devices()
	requireVulkan(t, err)
	if len(devs) == 0 {
		requireVulkan(t, ErrNoDevice)
	}
	for _, d := range devs {
		t.Logf("\n%s", Describe(d))
		if d.Name == "" || d.APIVersion == 0 || len(d.Heaps) == 0 {
			t.Errorf("device %d: incomplete info %+v", d.Index, d)
		}
		if d.Unusable != "" {
			continue
		}
		// Minimums the Vulkan spec guarantees for every conforming device.
		if d.MaxStorageBufferRange < 1<<27 || d.MaxComputeWorkGroupInvocations < 128 || d.MaxComputeSharedMemorySize < 16384 ||
			d.MinStorageBufferOffsetAlignment == 0 || d.MinStorageBufferOffsetAlignment > 256 || d.SubgroupSize == 0 {
			t.Errorf("device %d: limits below the spec's minimums: %+v", d.Index, d)
		}
	}
}

func TestOutOfMemoryNamesTheRequest(t *testing.T) {
	d := device(t)
	huge := d.Info.DeviceLocalBytes()*4 + 1<<40
	_, err := d.Alloc(huge, "float32 tensor 'wte' of 1e12 elements")
	if err == nil {
		t.Fatalf("allocating %d bytes succeeded", huge)
	}
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "'wte'") {
		t.Errorf("error %q should wrap ErrOutOfMemory and name the tensor", err)
	}
	if derr := d.Err(); derr != nil {
		t.Errorf("an allocation failure poisoned the device: %v", derr)
	}
}

func TestBarriersOnlyOnHazards(t *testing.T) {
	d := device(t)
	b := NewBackendOn(d)
	defer b.Close()
	xs := make([]*tensor.Tensor, 4)
	for i := range xs {
		var err error
		if xs[i], err = tensor.New(b, tensor.Float32, 4096); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	s0 := d.RecordStats()
	for _, x := range xs { // independent: no barrier
		b.Fill(x, 1)
	}
	s1 := d.RecordStats()
	if s1.Dispatches-s0.Dispatches != 4 || s1.Barriers != s0.Barriers {
		t.Errorf("4 independent fills: %d dispatches, %d barriers; want 4, 0", s1.Dispatches-s0.Dispatches, s1.Barriers-s0.Barriers)
	}
	b.Add(xs[0], xs[1], xs[2]) // reads what the fills wrote: one barrier
	b.Scale(xs[3], 2)          // touches only xs[3], written before the barrier: none
	b.Scale(xs[0], 3)          // read-modify-write of Add's output: one barrier
	s2 := d.RecordStats()
	if s2.Barriers-s1.Barriers != 2 {
		t.Errorf("dependent chain: %d barriers, want 2", s2.Barriers-s1.Barriers)
	}
	got := download(t, b, xs[0])
	if got[0] != 6 || got[4095] != 6 {
		t.Errorf("(1+1)*3 = %g", got[0])
	}
}

func TestProfiling(t *testing.T) {
	d := device(t)
	if d.Info.TimestampBits == 0 {
		t.Skipf("%s has no compute timestamps", d.Info.Name)
	}
	if err := d.SetProfiling(true); err != nil {
		t.Fatal(err)
	}
	defer d.SetProfiling(false)
	d.ResetProfile()
	b := NewBackendOn(d)
	defer b.Close()
	x, _ := tensor.New(b, tensor.Float32, 1<<16)
	out, _ := tensor.New(b, tensor.Float32, 1)
	for range 3 {
		b.Fill(x, 0.5)
		b.Sum(out, x)
	}
	if got := download(t, b, out)[0]; got != 1<<15 {
		t.Errorf("sum = %g, want %d", got, 1<<15)
	}
	prof := map[string]ProfileEntry{}
	for _, e := range d.Profile() {
		prof[e.Kernel] = e
	}
	if prof["fill_vec4"].Count != 3 || prof["sum"].Count < 3 { // x starts its buffer: Fill takes vec4s
		t.Errorf("profile counts: %+v", prof)
	}
	for _, e := range prof {
		if e.Total <= 0 {
			t.Errorf("kernel %s: non-positive time %v", e.Kernel, e.Total)
		}
	}
}

// TestPipelineCacheFile checks that closing a device writes the pipeline cache where
// pipelineCacheFile says and that a later device accepts it.
func TestPipelineCacheFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("VKGRAD_CACHE_DIR", dir)
	t.Setenv("VKGRAD_VALIDATION", "")
	for round := range 2 {
		d, _, err := OpenDevice(testDeviceSpec())
		requireVulkan(t, err)
		b := NewBackendOn(d)
		x, _ := tensor.New(b, tensor.Float32, 10)
		b.Fill(x, 1)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if d.pcacheLoaded != (round == 1) {
			t.Errorf("round %d: pipeline cache loaded from disk = %v", round, d.pcacheLoaded)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		path, _ := pipelineCacheFile(d.Info)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("round %d: no pipeline cache at %s: %v", round, path, err)
		}
		data, _ := os.ReadFile(path)
		if !d.pipelineCacheHeaderOK(data) {
			t.Errorf("cache header does not match the device (%d bytes)", st.Size())
		}
	}
	// An unwritable cache directory (under a regular file) costs nothing but the cache.
	blocker := filepath.Join(dir, "not-a-directory")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VKGRAD_CACHE_DIR", filepath.Join(blocker, "vkgrad"))
	d, _, err := OpenDevice(testDeviceSpec())
	requireVulkan(t, err)
	if err := d.Close(); err != nil {
		t.Errorf("Close with an unwritable cache directory: %v", err)
	}
}

// skipUnlessAllocationExceedsRange skips a test of a tensor of size bytes, larger than one
// storage-buffer window, on a device whose one allocation cannot hold it: there (NVIDIA's
// windows span the 4 GiB an allocation may have) no tensor outgrows a window.
func skipUnlessAllocationExceedsRange(t *testing.T, info DeviceInfo, size uint64) {
	t.Helper()
	if size > info.AllocationLimit() {
		t.Skipf("%s allows one allocation of %s, no larger than a storage-buffer window of %s: no tensor outgrows a window",
			info.Name, sysinfo.FormatBytes(info.AllocationLimit()), sysinfo.FormatBytes(uint64(info.MaxStorageBufferRange)))
	}
}

// TestBeyondMaxStorageBufferRange runs ops on a tensor larger than one descriptor can span.
func TestBeyondMaxStorageBufferRange(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates more than maxStorageBufferRange")
	}
	d := device(t)
	n := int(d.Info.MaxStorageBufferRange/4) + 3000
	skipUnlessAllocationExceedsRange(t, d.Info, uint64(n)*4)
	if uint64(n)*8 > d.Info.DeviceLocalBytes()/2 {
		t.Skipf("%d elements do not fit comfortably in %s", n, sysinfo.FormatBytes(d.Info.DeviceLocalBytes()))
	}
	b := NewBackendOn(d)
	defer b.Close()
	x, err := tensor.New(b, tensor.Float32, n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(x.Storage)
	out, _ := tensor.New(b, tensor.Float32, 1)
	b.Fill(x, 0.25)
	b.Scale(x, 2)
	b.Sum(out, x)
	if got, want := download(t, b, out)[0], float64(n)*0.5; math.Abs(float64(got)-want) > 1e-6*want {
		t.Errorf("sum = %g, want %g", got, want)
	}
	tail := make([]float32, 10)
	if err := b.Download(tail, x.View(n-10, 10)); err != nil {
		t.Fatal(err)
	}
	for _, v := range tail {
		if v != 0.5 {
			t.Fatalf("tail element = %g, want 0.5", v)
		}
	}
}

// TestConcurrentUse drives one device from several goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	d := device(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := NewBackendOn(d)
			defer b.Close()
			x, err := tensor.New(b, tensor.Float32, 1000)
			if err != nil {
				errs <- err
				return
			}
			for i := range 20 {
				b.Fill(x, float32(g))
				b.Scale(x, float32(i))
				got := make([]float32, 1000)
				if err := b.Download(got, x); err != nil {
					errs <- err
					return
				}
				if got[999] != float32(g*i) {
					errs <- errors.New("wrong value under concurrency")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDeviceLostIsSticky injects a device-lost result and checks that every later operation
// reports it instead of touching the device.
func TestDeviceLostIsSticky(t *testing.T) {
	t.Setenv("VKGRAD_VALIDATION", "")
	d, _, err := OpenDevice(testDeviceSpec())
	requireVulkan(t, err)
	b := NewBackendOn(d)
	x, err := tensor.New(b, tensor.Float32, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.fail(check("vkQueueSubmit", errDeviceLost))
	d.mu.Unlock()
	b.Fill(x, 1) // queued op: its error surfaces at Sync
	if err := b.Sync(); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("Sync after loss: %v", err)
	}
	if err := b.Download(make([]float32, 16), x); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("Download after loss: %v", err)
	}
	if _, err := b.Alloc(tensor.Float32, 4); !errors.Is(err, ErrDeviceLost) {
		t.Errorf("Alloc after loss: %v", err)
	}
	if !strings.Contains(d.Err().Error(), d.Info.Name) {
		t.Errorf("device error %q does not name the device", d.Err())
	}
	b.Close()
	if err := d.Close(); err != nil {
		t.Errorf("Close after loss: %v", err)
	}
}

// TestMaxWindowElemsWholeVec4s checks windows hold whole vec4s under NVIDIA's limits (a range
// of 2^32-1 bytes), so that the reductions' vec4 kernels still run there.
func TestMaxWindowElemsWholeVec4s(t *testing.T) {
	for _, c := range []struct {
		rng   uint32
		align uint64
	}{{1<<32 - 1, 16}, {1<<32 - 1, 64}, {1 << 27, 4}, {1<<31 - 1, 256}} {
		d := &Device{}
		d.Info.MaxStorageBufferRange, d.Info.MinStorageBufferOffsetAlignment = c.rng, c.align
		n := d.MaxWindowElems()
		if n%4 != 0 || uint64(n)*4+c.align > uint64(c.rng) || uint64(n+4)*4+c.align <= uint64(c.rng) {
			t.Errorf("range %d, alignment %d: %d elements, want the most whole vec4s that fit with the slack", c.rng, c.align, n)
		}
	}
}
