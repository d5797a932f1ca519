package vk

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDiagnoseDrivers names each manifest the loader would read and why its driver cannot
// serve: a library that does not load (with the dynamic linker's reason), a manifest that is
// not JSON or names no library, and no manifest at all.
func TestDiagnoseDrivers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows lists its drivers in the registry")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := write("missing.json", `{"file_format_version": "1.0.1", "ICD": {"library_path": "libvkgrad_no_such_driver.so.0"}}`)
	relative := write("relative.json", `{"ICD": {"library_path": "./drivers/libnone.so"}}`)
	broken := write("broken.json", `{"ICD": `)
	empty := write("empty.json", `{"ICD": {}}`)
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	got := diagnoseDrivers(env(map[string]string{"VK_DRIVER_FILES": dir}))
	for _, want := range []string{
		"driver manifest " + missing + " names libvkgrad_no_such_driver.so.0, which does not load: ",
		"libvkgrad_no_such_driver.so.0: cannot open shared object file",
		"driver manifest " + relative + " names ./drivers/libnone.so, which does not load: " + filepath.Join(dir, "drivers/libnone.so"),
		"driver manifest " + broken + " is not JSON",
		"driver manifest " + empty + " names no ICD.library_path",
	} {
		if runtime.GOOS != "linux" && strings.Contains(want, "cannot open shared object") {
			continue // the dynamic linker's words differ
		}
		if !strings.Contains(got, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}

	// The older variable, a list of files.
	got = diagnoseDrivers(env(map[string]string{"VK_ICD_FILENAMES": missing + string(os.PathListSeparator) + empty}))
	if strings.Count(got, "driver manifest ") != 2 || strings.Contains(got, broken) {
		t.Errorf("VK_ICD_FILENAMES: %s", got)
	}

	// Folders without manifests, as a machine without a driver has.
	none := t.TempDir()
	got = diagnoseDrivers(env(map[string]string{"VK_DRIVER_FILES": none}))
	if want := "no driver manifest (*.json) in " + none + ": install a Vulkan driver"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
}
