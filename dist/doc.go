// Package dist runs one process per device under an MPI launcher (mpirun, mpiexec, srun) and
// sums gradients across them in an order it controls, so results do not depend on the number
// of processes. MPI (Open MPI or MPICH) is loaded at run time without cgo.
package dist
