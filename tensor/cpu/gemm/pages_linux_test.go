package gemm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFloats returns n float32s of fresh anonymous memory, backed by transparent huge pages
// where huge and the kernel allows them, else by base pages, and a function that unmaps it.
func mapFloats(n int, huge bool) ([]float32, func()) {
	mem, err := unix.Mmap(-1, 0, 4*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	advice := unix.MADV_NOHUGEPAGE
	if huge {
		advice = unix.MADV_HUGEPAGE
	}
	_ = unix.Madvise(mem, advice) // where THP is unsupported the pages stay as they are
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n), func() { _ = unix.Munmap(mem) }
}
