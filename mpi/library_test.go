package mpi

import (
	"errors"
	"strings"
	"testing"
)

func TestMissingMPINamesWhatWasTried(t *testing.T) {
	env := map[string]string{"VKGRAD_MPI_LIBRARY": "/no/such/libmpi.so"}
	_, err := loadLibrary(func(k string) string { return env[k] })
	if !errors.Is(err, ErrNoMPI) || !strings.Contains(err.Error(), "/no/such/libmpi.so") {
		t.Fatalf("error %v should wrap ErrNoMPI and name the library", err)
	}
	// A library that is not MPI (the C library) is refused by name, not called.
	env["VKGRAD_MPI_LIBRARY"] = "libc.so.6"
	if _, err = loadLibrary(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "MPI_Init_thread") {
		t.Fatalf("libc as MPI: %v, want an error naming the missing MPI functions", err)
	}
}
