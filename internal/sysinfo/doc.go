// Package sysinfo measures the memory, bandwidth and CPU the process has, for benchmarks and budgets.
//
// [AvailableMemory] is how much more memory the process can take, which memory budgets are
// sized to; [PeakRSS] is its peak resident set size and [ReadBandwidth] the memory read
// bandwidth of all cores, which the benchmarks report. [CPUModel] and [SIMDFeatures] name the
// processor and the extensions of it the CPU kernels use.
package sysinfo
