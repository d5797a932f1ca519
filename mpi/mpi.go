package mpi

import (
	"fmt"
	"math"
	"unsafe"
)

// The raw MPI calls. Each returns an error naming the call and MPI's own message; the
// communicator's error handler is MPI_ERRORS_RETURN, so a failure comes back here instead of
// aborting the job. They must run on the Comm's MPI thread.

func (l *library) check(name string, rc int32) error {
	if rc == 0 {
		return nil
	}
	buf := make([]byte, l.abi.maxVersionString+1024)
	var n int32
	if call(l.fn.Error_string, uintptr(rc), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))) == 0 && n > 0 && int(n) <= len(buf) {
		return fmt.Errorf("mpi: %s failed: %s (MPI error %d)", name, buf[:n], rc)
	}
	return fmt.Errorf("mpi: %s failed with MPI error %d", name, rc)
}

func (l *library) libraryVersion() string {
	buf := make([]byte, l.abi.maxVersionString+1)
	var n int32
	if call(l.fn.Get_library_version, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n))) != 0 || n <= 0 || int(n) > len(buf) {
		return ""
	}
	return string(buf[:n])
}

func (l *library) initialized() (bool, error) {
	var flag int32
	err := l.check("MPI_Initialized", call(l.fn.Initialized, uintptr(unsafe.Pointer(&flag))))
	return flag != 0, err
}

func (l *library) initThread() error {
	var provided int32
	if err := l.check("MPI_Init_thread", call(l.fn.Init_thread, 0, 0, threadSerialized, uintptr(unsafe.Pointer(&provided)))); err != nil {
		return err
	}
	// Every MPI call comes from one locked OS thread, so FUNNELED would do; fewer is not enough.
	if provided < 1 {
		return fmt.Errorf("mpi: %s provides thread level %d, vkgrad needs at least MPI_THREAD_FUNNELED", l.abi.name, provided)
	}
	return l.check("MPI_Comm_set_errhandler", call(l.fn.Comm_set_errhandler, l.commWorld, l.errorsReturn))
}

func (l *library) rankSize() (rank, size int, err error) {
	var r, s int32
	if err := l.check("MPI_Comm_rank", call(l.fn.Comm_rank, l.commWorld, uintptr(unsafe.Pointer(&r)))); err != nil {
		return 0, 0, err
	}
	if err := l.check("MPI_Comm_size", call(l.fn.Comm_size, l.commWorld, uintptr(unsafe.Pointer(&s)))); err != nil {
		return 0, 0, err
	}
	return int(r), int(s), nil
}

// count converts a length to MPI's int count.
func count(name string, n int) (uintptr, error) {
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("mpi: %s of %d elements exceeds MPI's int count", name, n)
	}
	return uintptr(n), nil
}

// ptr is the address of a slice's first element, or of a dummy byte for an empty slice: MPI
// may read a buffer pointer even for a zero count.
func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		var dummy [8]byte
		return unsafe.Pointer(&dummy[0])
	}
	return unsafe.Pointer(&s[0])
}

func counts32(name string, xs []int) ([]int32, error) {
	out := make([]int32, len(xs))
	for i, x := range xs {
		if x < 0 || x > math.MaxInt32 {
			return nil, fmt.Errorf("mpi: %s: %d elements exceed MPI's int count", name, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}
