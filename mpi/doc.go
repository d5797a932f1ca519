// Package mpi runs data-parallel training in MPI processes, one per device.
//
// [Launched] says whether an MPI launcher (Open MPI's mpirun, MPICH's mpiexec, or a PMI/PMIx
// launcher such as Slurm's srun) started the process, and [Init] loads MPI and returns the
// world [Comm]. The MPI library (Open MPI or MPICH) is loaded at run time without cgo; where
// none can be loaded, [Init]'s error wraps [ErrNoMPI].
//
// # Reproducible sums
//
// A [Reducer] sums the gradients of the micro-batches spread over the processes ([Held] says
// which ones a rank holds) in micro-batch order, element by element, in its own code: MPI only
// moves the data, so the result does not depend on the number of processes or on the MPI
// library's algorithms. [HashFloat32s] lets the ranks check that their replicas agree.
package mpi
