package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/vkgrad/vkgrad/tensor"
)

// TestLargeAllocAdvisesHugePages checks that a large float32 storage's aligned interior lies
// in a mapping the kernel marks for transparent huge pages ("hg" in smaps' VmFlags), and a
// small one is left alone.
func TestLargeAllocAdvisesHugePages(t *testing.T) {
	probe := make([]byte, 2*hugePage)
	if err := syscall.Madvise(probe, syscall.MADV_HUGEPAGE); err != nil {
		t.Skipf("kernel refuses MADV_HUGEPAGE (%v); nothing to check", err)
	}
	// An emulator (qemu-user, running the arm64 tests) accepts the advice without passing
	// it on, so smaps never shows it.
	if !smapsFlag(t, uintptr(unsafe.Pointer(&probe[0])), "hg") {
		t.Skip("advice accepted but not shown in smaps (an emulator?); nothing to check")
	}
	b := New()
	s, err := b.Alloc(tensor.Float32, 3*hugePage/4)
	if err != nil {
		t.Fatal(err)
	}
	f := s.(*storage).f
	p := uintptr(unsafe.Pointer(&f[0]))
	interior := (p + hugePage - 1) &^ (hugePage - 1)
	if !smapsFlag(t, interior, "hg") {
		t.Errorf("interior of a %d MiB allocation at %#x is not advised for huge pages", len(f)*4>>20, interior)
	}
	// The small slice gets a mapping of its own: in the Go heap it could share one with
	// memory an earlier test's large storage advised.
	mem, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	small := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), 1024)
	adviseHugePages(small)
	if smapsFlag(t, uintptr(unsafe.Pointer(&small[0])), "hg") {
		t.Errorf("a 4 KiB allocation was advised for huge pages")
	}
}

// smapsFlag reports whether the mapping holding addr has flag among its VmFlags.
func smapsFlag(t *testing.T, addr uintptr, flag string) bool {
	t.Helper()
	fh, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	inside := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line + " ")[0], "-"); ok {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				inside = uint64(addr) >= l && uint64(addr) < h
				continue
			}
		}
		if inside && strings.HasPrefix(line, "VmFlags:") {
			return strings.Contains(line+" ", " "+flag+" ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return false
}
