package mpi

import "strconv"

// Launched reports whether the process was started by an MPI launcher: Open MPI's mpirun,
// MPICH's Hydra (mpiexec), or a PMI/PMIx launcher such as Slurm's srun.
func Launched(getenv func(string) string) bool {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"} {
		if getenv(k) != "" {
			return true
		}
	}
	return false
}

// LocalRank is the process's index among those of its job on the same machine, from the
// launcher's environment (0 when no launcher says): it picks the device a process uses.
func LocalRank(getenv func(string) string) int {
	for _, k := range []string{"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"} {
		if v := getenv(k); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return n
			}
		}
	}
	return 0
}

// LocalSize is the number of the job's processes on this machine (1 when no launcher says).
func LocalSize(getenv func(string) string) int {
	for _, k := range []string{"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "PMIX_LOCAL_SIZE"} {
		if v := getenv(k); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1
}
