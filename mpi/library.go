package mpi

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
)

// ErrNoMPI is wrapped by the error returned when no MPI library could be loaded.
var ErrNoMPI = errors.New("mpi: no MPI library found")

// funcs holds the address of each MPI function used, named "MPI_" + the field name.
type funcs struct {
	Init_thread, Initialized, Finalize, Abort                      uintptr
	Comm_rank, Comm_size, Comm_set_errhandler, Get_library_version uintptr
	Error_string, Barrier, Bcast, Allreduce, Allgather, Allgatherv uintptr
	Alltoallv                                                      uintptr
}

// library is a loaded MPI implementation with its handles resolved.
type library struct {
	abi     abi
	path    string
	version string // MPI_Get_library_version
	fn      funcs

	commWorld, float32T, float64T, int64T, byteT, opSum, errorsReturn uintptr
}

// candidates lists the ABIs to try, the launcher's own first: a process started by Open MPI's
// mpirun must not load MPICH (it would run as a singleton), and the reverse.
func candidates(getenv func(string) string) []abi {
	if getenv("OMPI_COMM_WORLD_SIZE") == "" && (getenv("PMI_SIZE") != "" || getenv("HYDRA_CONTROL_FD") != "") {
		return []abi{mpich, openMPI}
	}
	return []abi{openMPI, mpich}
}

// loadLibrary opens $VKGRAD_MPI_LIBRARY when set, else the first MPI library that opens, and
// resolves its functions and handles. The error names every library tried and why it failed.
func loadLibrary(getenv func(string) string) (*library, error) {
	// UCX (under Open MPI and MPICH) installs a SIGSEGV handler that turns the Go runtime's
	// recoverable nil-pointer panics into a crash; an empty list keeps its hands off signals.
	if _, set := os.LookupEnv("UCX_ERROR_SIGNALS"); !set {
		os.Setenv("UCX_ERROR_SIGNALS", "")
	}
	// The MPI thread waits in a gradient bucket's collectives while the backward pass computes
	// beside it; Open MPI's busy polling would take a core from that pass, yielding does not.
	if _, set := os.LookupEnv("OMPI_MCA_mpi_yield_when_idle"); !set {
		os.Setenv("OMPI_MCA_mpi_yield_when_idle", "1")
	}
	var tried []string
	if p := getenv("VKGRAD_MPI_LIBRARY"); p != "" {
		for _, a := range candidates(getenv) {
			l, err := openAs(a, p)
			if err == nil {
				return l, nil
			}
			tried = append(tried, fmt.Sprintf("%s as %s: %v", p, a.name, err))
		}
		return nil, fmt.Errorf("%w: VKGRAD_MPI_LIBRARY=%s (%s)", ErrNoMPI, p, strings.Join(tried, "; "))
	}
	for _, a := range candidates(getenv) {
		for _, name := range a.libs {
			l, err := openAs(a, name)
			if err == nil {
				return l, nil
			}
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
		}
	}
	return nil, fmt.Errorf("%w (tried %s; install Open MPI or MPICH, or set VKGRAD_MPI_LIBRARY)", ErrNoMPI, strings.Join(tried, "; "))
}

// FindLibrary loads the MPI library Init would use, without initialising it, and returns its
// path and the first line of MPI_Get_library_version; the error wraps ErrNoMPI when none loads.
func FindLibrary(getenv func(string) string) (path, version string, err error) {
	l, err := loadLibrary(getenv)
	if err != nil {
		return "", "", err
	}
	return l.path, strings.TrimRight(firstLine(l.version), "\x00 "), nil
}

// openAs opens the library at name and reads it with ABI a, checking that the library says
// it is that implementation.
func openAs(a abi, name string) (*library, error) {
	h, err := dlopen(name)
	if err != nil {
		return nil, err
	}
	l := &library{abi: a, path: name}
	var missing []string
	v := reflect.ValueOf(&l.fn).Elem()
	for i := range v.NumField() {
		sym := "MPI_" + v.Type().Field(i).Name
		p, err := dlsym(h, sym)
		if err != nil || p == 0 {
			missing = append(missing, sym)
		}
		v.Field(i).SetUint(uint64(p))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not an MPI library: missing %s", strings.Join(missing, ", "))
	}
	resolve := func(hd handle) uintptr {
		if !a.symbols {
			return hd.value
		}
		p, err := dlsym(h, hd.symbol)
		if err != nil || p == 0 {
			missing = append(missing, hd.symbol)
		}
		return p
	}
	l.commWorld, l.float32T, l.float64T = resolve(a.commWorld), resolve(a.float32T), resolve(a.float64T)
	l.int64T, l.byteT, l.opSum, l.errorsReturn = resolve(a.int64T), resolve(a.byteT), resolve(a.opSum), resolve(a.errorsReturn)
	if len(missing) > 0 {
		return nil, fmt.Errorf("not %s: missing %s", a.name, strings.Join(missing, ", "))
	}
	l.version = l.libraryVersion()
	if !strings.Contains(l.version, a.name) {
		return nil, fmt.Errorf("MPI_Get_library_version says %q, not %s", firstLine(l.version), a.name)
	}
	return l, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
