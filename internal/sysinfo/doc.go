// Package sysinfo measures the memory and bandwidth the process has, for benchmarks and budgets.
//
// [AvailableMemory] is how much more memory the process can take, which memory budgets are
// sized to; [PeakRSS] is its peak resident set size and [ReadBandwidth] the memory read
// bandwidth of all cores, which the benchmarks report.
package sysinfo
