package sysinfo

import (
	"bufio"
	"os"
	"strings"

	"golang.org/x/sys/cpu"
)

// CPUModel is the processor's name from /proc/cpuinfo, or "" where the system has no such file
// or it names none (many arm64 kernels).
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name", "Model", "Hardware":
			if v := strings.TrimSpace(value); v != "" {
				return v
			}
		}
	}
	return ""
}

// SIMDFeatures lists the SIMD extensions the CPU kernels look for that this CPU has.
func SIMDFeatures() []string {
	var have []string
	add := func(name string, ok bool) {
		if ok {
			have = append(have, name)
		}
	}
	add("avx", cpu.X86.HasAVX)
	add("avx2", cpu.X86.HasAVX2)
	add("fma", cpu.X86.HasFMA)
	add("avx512f", cpu.X86.HasAVX512F)
	add("avx512bw", cpu.X86.HasAVX512BW)
	add("asimd", cpu.ARM64.HasASIMD)
	add("asimdhp", cpu.ARM64.HasASIMDHP)
	add("sve", cpu.ARM64.HasSVE)
	return have
}
