package vk

import (
	"errors"
	"strings"
	"testing"
)

func fakeDevs(types ...DeviceType) []DeviceInfo {
	ds := make([]DeviceInfo, len(types))
	for i, t := range types {
		ds[i] = DeviceInfo{Index: i, Name: t.String() + "-dev", Type: t, ComputeQueueFamily: 0}
	}
	return ds
}

func TestSelect(t *testing.T) {
	unusable := fakeDevs(DeviceDiscrete, DeviceCPU)
	unusable[0].Unusable = "Vulkan 1.0.0 (vkgrad needs 1.1)"
	cases := []struct {
		name string
		devs []DeviceInfo
		spec string
		want int // -1: error
		in   string
	}{
		{"auto prefers discrete", fakeDevs(DeviceCPU, DeviceIntegrated, DeviceDiscrete), "auto", 2, "discrete"},
		{"auto then integrated", fakeDevs(DeviceCPU, DeviceIntegrated), "auto", 1, "integrated"},
		{"auto then virtual", fakeDevs(DeviceCPU, DeviceVirtual), "auto", 1, "virtual"},
		{"auto never cpu", fakeDevs(DeviceCPU), "auto", -1, "vulkan:0"},
		{"auto with nothing", nil, "auto", -1, "no devices"},
		{"vulkan takes cpu when alone", fakeDevs(DeviceCPU), "vulkan", 0, "cpu"},
		{"vulkan prefers gpu", fakeDevs(DeviceCPU, DeviceIntegrated), "vulkan", 1, "integrated"},
		{"explicit index", fakeDevs(DeviceDiscrete, DeviceCPU), "vulkan:1", 1, "as asked"},
		{"index out of range", fakeDevs(DeviceCPU), "vulkan:3", -1, "only 1"},
		{"bad index", fakeDevs(DeviceCPU), "vulkan:x", -1, "vulkan:N"},
		{"negative index", fakeDevs(DeviceCPU), "vulkan:-1", -1, "vulkan:N"},
		{"not vulkan", fakeDevs(DeviceCPU), "cuda", -1, "not a Vulkan device"},
		{"skips unusable", unusable, "auto", -1, "needs 1.1"},
		{"explicit unusable", unusable, "vulkan:0", -1, "unusable"},
	}
	for _, c := range cases {
		idx, reason, err := Select(c.devs, c.spec)
		if c.want < 0 {
			if err == nil {
				t.Errorf("%s: Select(%q) = %d, want an error", c.name, c.spec, idx)
			} else if !strings.Contains(err.Error(), c.in) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, c.in)
			}
			continue
		}
		if err != nil || idx != c.want {
			t.Errorf("%s: Select(%q) = %d, %v; want %d", c.name, c.spec, idx, err, c.want)
			continue
		}
		if strings.Contains(reason, "\n") || !strings.Contains(reason, c.in) {
			t.Errorf("%s: reason %q should be one line mentioning %q", c.name, reason, c.in)
		}
	}
	if _, _, err := Select(fakeDevs(DeviceCPU), "auto"); !IsUnavailable(err) {
		t.Errorf("auto with only a CPU device should be IsUnavailable (fall back to the CPU backend): %v", err)
	}
}

func TestNoLoaderError(t *testing.T) {
	_, err := openLoader([]string{"libvkgrad-no-such-loader.so.1", "another-missing.so"})
	if !errors.Is(err, ErrNoLoader) {
		t.Fatalf("error %v does not wrap ErrNoLoader", err)
	}
	for _, name := range []string{"libvkgrad-no-such-loader.so.1", "another-missing.so"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if !IsUnavailable(err) {
		t.Error("a missing loader should count as unavailable")
	}
}

func TestVersionsAndDescribe(t *testing.T) {
	if got := versionString(apiVersion(1, 3, 230)); got != "1.3.230" {
		t.Errorf("versionString = %q", got)
	}
	d := DeviceInfo{
		Index: 2, Name: "Test GPU", Type: DeviceDiscrete, VendorID: 0x10DE, Vendor: VendorName(0x10DE),
		DriverVersion: 535<<22 | 104<<14 | 5<<6, APIVersion: apiVersion(1, 3, 260),
		Heaps:      []MemoryHeap{{Size: 80 << 30, DeviceLocal: true}, {Size: 64 << 30}},
		HeapBudget: []uint64{70 << 30, 60 << 30}, MaxMemoryAllocationSize: 4 << 30,
		SubgroupSize: 32, Float16: true, ComputeUnits: 132,
		MaxStorageBufferRange: 1<<32 - 1, MaxComputeWorkGroupSize: [3]uint32{1024, 1024, 64},
		MaxComputeWorkGroupInvocations: 1024, MaxComputeSharedMemorySize: 48 << 10,
		MinStorageBufferOffsetAlignment: 16, TimestampPeriod: 1,
	}
	if got := d.DriverVersionString(); got != "535.104.5.0" {
		t.Errorf("NVIDIA driver version = %q, want 535.104.5.0", got)
	}
	if got := d.DeviceLocalBytes(); got != 80<<30 {
		t.Errorf("DeviceLocalBytes = %d", got)
	}
	if got := d.DeviceLocalBudget(); got != 70<<30 {
		t.Errorf("DeviceLocalBudget = %d, want the device-local heap's budget", got)
	}
	if got := d.AllocationLimit(); got != 4<<30 {
		t.Errorf("AllocationLimit = %d, want maxMemoryAllocationSize when maxBufferSize is not reported", got)
	}
	d.MaxBufferSize = 2 << 30
	if got := d.AllocationLimit(); got != 2<<30 {
		t.Errorf("AllocationLimit = %d, want the smaller limit", got)
	}
	d.MaxBufferSize = 0
	s := Describe(d)
	for _, want := range []string{"vulkan:2", "Test GPU", "[discrete]", "NVIDIA", "1.3.260", "80.0 GiB device-local", "64.0 GiB host", "subgroup 32", "fp16 yes", "1024x1024x64", "48.0 KiB", "offset alignment 16",
		"132 compute units", "budget 70.0 GiB", "one allocation at most 4.0 GiB, one buffer at most (not reported)"} {
		if !strings.Contains(s, want) {
			t.Errorf("Describe output lacks %q:\n%s", want, s)
		}
	}
	if VendorName(0x10005) != "Mesa" || VendorName(0x1234) != "0x1234" {
		t.Errorf("VendorName: %q %q", VendorName(0x10005), VendorName(0x1234))
	}
}

// TestPoolFreeList checks best-fit placement and coalescing on a block with no Vulkan memory
// behind it (only the bookkeeping runs).
func TestPoolFreeList(t *testing.T) {
	blk := &memBlock{size: 4096, free: []span{{0, 4096}}}
	p := &memPool{blockSize: 1 << 20, align: 256, blocks: []*memBlock{blk}, limit: 1 << 30}
	var bufs []*Buffer
	for range 4 {
		b, err := p.alloc(1000, "t") // 1024 reserved each
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	for i, b := range bufs {
		if b.off != uint64(i)*1024 || b.alloc != 1024 {
			t.Fatalf("buffer %d at %d (+%d), want %d (+1024)", i, b.off, b.alloc, i*1024)
		}
	}
	if len(blk.free) != 0 || p.inUse != 4096 {
		t.Fatalf("full block: free %v, inUse %d", blk.free, p.inUse)
	}
	p.release(bufs[1])
	p.release(bufs[3])
	if len(blk.free) != 2 {
		t.Fatalf("after two frees: %v", blk.free)
	}
	// 200 bytes fit either hole; both are 1024 so the first is taken.
	small, err := p.alloc(200, "s")
	if err != nil || small.off != 1024 || small.alloc != 256 {
		t.Fatalf("small at %d (+%d), %v", small.off, small.alloc, err)
	}
	// Best fit: a 768-byte request goes to the 768-byte remainder, not to the 1024 hole.
	mid, err := p.alloc(700, "m")
	if err != nil || mid.off != 1280 {
		t.Fatalf("mid at %d, want 1280 (%v)", mid.off, err)
	}
	p.release(small)
	p.release(mid)
	p.release(bufs[0])
	p.release(bufs[2])
	if len(blk.free) != 1 || blk.free[0] != (span{0, 4096}) || p.inUse != 0 {
		t.Fatalf("after freeing everything: %v, inUse %d", blk.free, p.inUse)
	}
}
