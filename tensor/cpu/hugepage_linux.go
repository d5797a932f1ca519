package cpu

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the architectures Go runs Linux on
// with 4 KiB base pages.
const hugePage = 2 << 20

// minHugeAdvise is the smallest allocation worth advising: below it the 2 MiB-aligned
// interior is at most a page or two.
const minHugeAdvise = 4 << 20

// adviseHugePages asks the kernel to back the 2 MiB-aligned interior of f (float32 storage or
// bfloat16 weight copies) with transparent huge pages. Large operands streamed by the matmuls (a weight's rows are 3 KiB or more
// apart) touch a new 4 KiB page every few cache lines, and the TLB misses measured 4-7% of
// the lm head's product. The advice only takes effect where the pages have not yet been
// touched (a fresh allocation from the operating system) or once the kernel collapses them;
// where THP is off or unsupported madvise fails and nothing changes, so errors are ignored.
func adviseHugePages[E float32 | uint16](f []E) {
	size := int(unsafe.Sizeof(E(0)))
	if len(f)*size < minHugeAdvise {
		return
	}
	p := uintptr(unsafe.Pointer(&f[0]))
	start := (p + hugePage - 1) &^ (hugePage - 1)
	end := (p + uintptr(len(f)*size)) &^ (hugePage - 1)
	if end <= start {
		return
	}
	interior := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&f[0]), start-p)), end-start)
	_ = syscall.Madvise(interior, syscall.MADV_HUGEPAGE)
}
