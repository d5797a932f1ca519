package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAvailableMemoryReaders(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mi := write("meminfo", "MemTotal:       24576000 kB\nMemFree:        1000 kB\nMemAvailable:   20000000 kB\n")
	if v, ok := meminfoAvailable(mi); !ok || v != 20000000<<10 {
		t.Errorf("MemAvailable = %d, %v", v, ok)
	}
	if v, ok := meminfoField(mi, "MemTotal:"); !ok || v != 24576000<<10 {
		t.Errorf("MemTotal = %d, %v", v, ok)
	}
	write("memory.max", "8589934592\n")
	write("memory.current", "1073741824\n")
	if l, u, ok := cgroupV2(dir); !ok || l != 8<<30 || u != 1<<30 {
		t.Errorf("cgroup v2 = %d, %d, %v", l, u, ok)
	}
	write("memory.max", "max\n")
	if _, _, ok := cgroupV2(dir); ok {
		t.Error("memory.max \"max\" is no limit")
	}
	if v, src, ok := AvailableMemory(); ok && (v == 0 || src == "") {
		t.Errorf("AvailableMemory on this machine: %d from %q", v, src)
	}
}
