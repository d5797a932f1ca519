package mpi

// abi describes how one MPI implementation spells its predefined handles. The MPI standard
// fixes the names but not the values: Open MPI's handles are the addresses of exported objects,
// MPICH's are integer constants (both checked against their mpi.h by abi_test.go).
type abi struct {
	name    string   // "Open MPI" or "MPICH"
	libs    []string // shared libraries to try, in order
	symbols bool     // handles are addresses of the named exported objects
	// Handles, as integers (MPICH) or as symbol names to look up (Open MPI).
	commWorld, float32T, float64T, int64T, byteT, opSum, errorsReturn handle
	inPlace                                                           uintptr
	statusIgnore                                                      uintptr
	maxVersionString                                                  int
}

// handle is an MPI handle: a constant, or an exported object whose address is the handle.
type handle struct {
	value  uintptr
	symbol string
}

const threadSerialized = 2 // MPI_THREAD_SERIALIZED in both implementations

var openMPI = abi{
	name:             "Open MPI",
	libs:             []string{"libmpi.so.40", "libmpi.so", "libmpi.40.dylib", "libmpi.dylib"},
	symbols:          true,
	commWorld:        handle{symbol: "ompi_mpi_comm_world"},
	float32T:         handle{symbol: "ompi_mpi_float"},
	float64T:         handle{symbol: "ompi_mpi_double"},
	int64T:           handle{symbol: "ompi_mpi_int64_t"},
	byteT:            handle{symbol: "ompi_mpi_byte"},
	opSum:            handle{symbol: "ompi_mpi_op_sum"},
	errorsReturn:     handle{symbol: "ompi_mpi_errors_return"},
	inPlace:          1,
	statusIgnore:     0,
	maxVersionString: 256,
}

var mpich = abi{
	name:             "MPICH",
	libs:             []string{"libmpich.so.12", "libmpich.so", "libmpi.12.dylib", "libmpich.dylib"},
	commWorld:        handle{value: 0x44000000},
	float32T:         handle{value: 0x4c00040a},
	float64T:         handle{value: 0x4c00080b},
	int64T:           handle{value: 0x4c00083a},
	byteT:            handle{value: 0x4c00010d},
	opSum:            handle{value: 0x58000003},
	errorsReturn:     handle{value: 0x54000001},
	inPlace:          ^uintptr(0), // (void *) -1
	statusIgnore:     1,
	maxVersionString: 8192,
}
