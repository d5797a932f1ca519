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

// TestReusedMemoryCollapsesToHugePages checks that advising memory whose pages are already
// there (as the Go heap hands out reused memory) moves them into huge pages, and that a
// region with no page yet is not filled in.
func TestReusedMemoryCollapsesToHugePages(t *testing.T) {
	if !canCollapse(t) {
		t.Skip("the kernel (or an emulator) does not collapse memory into huge pages here; nothing to check")
	}
	mem := isolatedMapping(t, 4*hugePage)
	if err := syscall.Madvise(mem, syscall.MADV_NOHUGEPAGE); err != nil {
		t.Skipf("kernel refuses MADV_NOHUGEPAGE (%v); nothing to check", err)
	}
	f := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), len(mem)/4)
	p := uintptr(unsafe.Pointer(&f[0]))
	start := ((p + hugePage - 1) &^ (hugePage - 1)) - p
	// Base pages in the first whole region of the interior, none in the last.
	for i := start; i < start+hugePage; i += 4096 {
		mem[i] = 1
	}
	if kb := smapsField(t, p+start, "AnonHugePages:"); kb != 0 {
		t.Fatalf("the region is on huge pages (%d KiB) before the advice; nothing to check", kb)
	}
	adviseHugePages(f)
	if smapsField(t, p+start, "AnonHugePages:") == 0 {
		t.Errorf("the touched region of a %d MiB allocation is not on a huge page", len(mem)>>20)
	}
	if kb := smapsField(t, p+start, "Rss:"); kb > 2*hugePage>>10 {
		t.Errorf("advising committed %d KiB; only the touched 2 MiB region should be", kb)
	}
	for i := start; i < start+hugePage; i += 4096 {
		if mem[i] != 1 {
			t.Fatalf("byte %d changed in the collapse", i)
		}
	}
}

// isolatedMapping returns n bytes of fresh anonymous memory between two inaccessible pages,
// so that no mapping around it merges with it and lends smaps its huge pages.
func isolatedMapping(t *testing.T, n int) []byte {
	t.Helper()
	const guard = 4096
	mem, err := syscall.Mmap(-1, 0, n+2*guard, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:guard], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[guard+n:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return mem[guard : guard+n]
}

// canCollapse reports whether MADV_COLLAPSE turns a touched 2 MiB region into a huge page,
// as smaps shows it: an emulator (qemu-user, running the arm64 tests) accepts the advice
// without passing it on.
func canCollapse(t *testing.T) bool {
	probe := isolatedMapping(t, 2*hugePage)
	p := uintptr(unsafe.Pointer(&probe[0]))
	region := probe[((p+hugePage-1)&^(hugePage-1))-p:][:hugePage]
	region[0] = 1
	if syscall.Madvise(region, madvCollapse) != nil {
		return false
	}
	kb, ok := smapsKB(t, uintptr(unsafe.Pointer(&region[0])), "AnonHugePages:")
	return ok && kb > 0
}

// smapsField returns the kB value of field (such as "Rss:") for the mapping holding addr.
func smapsField(t *testing.T, addr uintptr, field string) int {
	t.Helper()
	kb, ok := smapsKB(t, addr, field)
	if !ok {
		t.Fatalf("no readable %s line for the mapping holding %#x", field, addr)
	}
	return kb
}

// smapsKB is smapsField reporting, instead of failing, a mapping or line it cannot read.
func smapsKB(t *testing.T, addr uintptr, field string) (int, bool) {
	t.Helper()
	v, ok := smapsLine(t, addr, field)
	if !ok {
		return 0, false
	}
	kb, err := strconv.Atoi(strings.Fields(v)[1])
	return kb, err == nil
}

// smapsFlag reports whether the mapping holding addr has flag among its VmFlags.
func smapsFlag(t *testing.T, addr uintptr, flag string) bool {
	t.Helper()
	line, _ := smapsLine(t, addr, "VmFlags:")
	return strings.Contains(line+" ", " "+flag+" ")
}

// smapsLine returns the line starting with prefix in the smaps entry of the mapping holding
// addr.
func smapsLine(t *testing.T, addr uintptr, prefix string) (string, bool) {
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
		if inside && strings.HasPrefix(line, prefix) {
			return line, true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", addr)
	return "", false
}
