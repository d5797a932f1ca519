package vk

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func f32bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesf32(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

func TestUploadDispatchDownload(t *testing.T) {
	d := device(t)
	t.Log(testDevReason)
	const n = 1000
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = float32(i) * 0.5
		b[i] = float32(n-i) * 0.25
	}
	ba, err := d.Alloc(4*n, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(ba)
	bb, _ := d.Alloc(4*n, "b")
	defer d.Free(bb)
	bo, _ := d.Alloc(4*n, "out")
	defer d.Free(bo)
	if err := d.Upload(ba, 0, f32bytes(a)); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(bb, 0, f32bytes(b)); err != nil {
		t.Fatal(err)
	}
	// Bind windows starting at element 3 to exercise the push-constant offsets.
	m := n - 3
	wo, _ := d.Window(bo, 3, m)
	wa, _ := d.Window(ba, 3, m)
	wb, _ := d.Window(bb, 3, m)
	k := Kernel{Shader: "add", Bindings: 3, Push: 4, Local: [3]uint32{64, 1, 1}}
	push := binaryPush{N: uint32(m), OffOut: wo.First, OffA: wa.First, OffB: wb.First}
	if err := d.Dispatch(k, [3]uint32{4, 1, 1}, pushOf(&push), Arg{W: wo, Write: true}, Arg{W: wa}, Arg{W: wb}); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := d.Download(out, bo, 0); err != nil {
		t.Fatal(err)
	}
	got := bytesf32(out)
	for i := range got {
		want := float32(0)
		if i >= 3 {
			want = a[i] + b[i]
		}
		if got[i] != want {
			t.Fatalf("out[%d] = %g, want %g", i, got[i], want)
		}
	}
}

// TestValidationReportsErrors checks that the messenger collects what the layer reports, so
// that tests run with VKGRAD_VALIDATION=1 can trust an empty message list, and passes each
// message to the handler a program sets.
func TestValidationReportsErrors(t *testing.T) {
	inst, err := NewInstance(InstanceOptions{Validation: true})
	if err != nil && !IsUnavailable(err) {
		t.Skipf("validation layer unavailable: %v", err)
	}
	requireVulkan(t, err)
	defer inst.Close()
	devs, err := inst.Devices()
	if err != nil {
		t.Fatal(err)
	}
	idx, _, err := Select(devs, testDeviceSpec())
	requireVulkan(t, err)
	d, err := inst.OpenDevice(idx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if msgs := inst.ValidationMessages(); len(msgs) != 0 {
		t.Fatalf("validation messages from a clean device open: %q", msgs)
	}
	var mu sync.Mutex
	var passed []string
	inst.OnValidationMessage(func(m string) {
		mu.Lock()
		passed = append(passed, m)
		mu.Unlock()
	})
	// A zero-sized buffer breaks VUID-VkBufferCreateInfo-size-00912.
	bci := &bufferCreateInfo{SType: stBufferCreateInfo, Size: 0, Usage: bufferUsageStorageBuffer}
	var buf uint64
	call(d.fn.CreateBuffer, d.handle, uintptr(unsafe.Pointer(bci)), 0, uintptr(unsafe.Pointer(&buf)))
	if buf != 0 {
		callPtr(d.fn.DestroyBuffer, d.handle, uintptr(buf), 0)
	}
	msgs := inst.ValidationMessages()
	if len(msgs) == 0 {
		t.Fatal("a zero-sized vkCreateBuffer produced no validation message")
	}
	if !strings.Contains(strings.Join(msgs, "\n"), "size") {
		t.Errorf("messages do not mention the size: %q", msgs)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(passed, msgs) {
		t.Errorf("OnValidationMessage passed %q, the log holds %q", passed, msgs)
	}
}

// TestDeviceReportsAllocationLimits: the driver's allocation and buffer limits are read
// (every Vulkan 1.1 device reports the first; 1.3 devices the second).
func TestDeviceReportsAllocationLimits(t *testing.T) {
	d := device(t)
	info := d.Info
	if info.MaxMemoryAllocationSize == 0 {
		t.Errorf("%s reports no maxMemoryAllocationSize", info.Name)
	}
	if info.APIVersion >= apiVersion(1, 3, 0) && info.MaxBufferSize == 0 {
		t.Errorf("%s (Vulkan %s) reports no maxBufferSize", info.Name, info.APIVersionString())
	}
	if lim := info.AllocationLimit(); lim == 0 || lim > info.MaxMemoryAllocationSize {
		t.Errorf("allocation limit %d against maxMemoryAllocationSize %d", lim, info.MaxMemoryAllocationSize)
	}
	t.Logf("%s: allocation %d, buffer %d, budget %v", info.Name, info.MaxMemoryAllocationSize, info.MaxBufferSize, info.HeapBudget)
}
