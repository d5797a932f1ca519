package sysinfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// AvailableMemory is how much more memory this process can take, in bytes, and where the
// figure comes from: the smaller of the cgroup's limit less its usage (v2, or v1) and
// /proc/meminfo's MemAvailable. ok is false where none of them can be read.
func AvailableMemory() (bytes uint64, source string, ok bool) {
	best := func(v uint64, src string) {
		if !ok || v < bytes {
			bytes, source, ok = v, src, true
		}
	}
	if v, found := meminfoAvailable("/proc/meminfo"); found {
		best(v, "MemAvailable")
	}
	if limit, usage, found := cgroupV2("/sys/fs/cgroup"); found && limit > usage {
		best(limit-usage, "cgroup memory.max")
	} else if limit, usage, found := cgroupV1("/sys/fs/cgroup/memory"); found && limit > usage {
		best(limit-usage, "cgroup memory.limit_in_bytes")
	}
	return bytes, source, ok
}

// TotalMemory is the memory this process's machine or cgroup has, in bytes: the smaller of
// /proc/meminfo's MemTotal and the cgroup's limit (v2, or v1). ok is false where neither can be
// read.
func TotalMemory() (bytes uint64, ok bool) {
	bytes, ok = meminfoField("/proc/meminfo", "MemTotal:")
	limit, _, found := cgroupV2("/sys/fs/cgroup")
	if !found {
		limit, _, found = cgroupV1("/sys/fs/cgroup/memory")
	}
	if found && (!ok || limit < bytes) {
		bytes, ok = limit, true
	}
	return bytes, ok
}

func meminfoAvailable(path string) (uint64, bool) { return meminfoField(path, "MemAvailable:") }

// meminfoField reads the line of /proc/meminfo that starts with key, in bytes.
func meminfoField(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			fields := strings.Fields(v)
			if len(fields) >= 1 {
				if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
					return kb << 10, true
				}
			}
		}
	}
	return 0, false
}

// readUint reads a number from a one-line file; "max" (no limit) is not a number.
func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

func cgroupV2(dir string) (limit, usage uint64, ok bool) {
	limit, ok1 := readUint(dir + "/memory.max")
	usage, ok2 := readUint(dir + "/memory.current")
	return limit, usage, ok1 && ok2
}

func cgroupV1(dir string) (limit, usage uint64, ok bool) {
	limit, ok1 := readUint(dir + "/memory.limit_in_bytes")
	usage, ok2 := readUint(dir + "/memory.usage_in_bytes")
	// v1 reports an unlimited group as a huge page-aligned number.
	return limit, usage, ok1 && ok2 && limit < 1<<60
}
