package shaders

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSPIRVUpToDate recompiles each .comp but the KHR ones with glslc and fails when the
// committed .spv differs, so a shader edited without `go generate ./shaders` cannot go
// unnoticed.
func TestSPIRVUpToDate(t *testing.T) {
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		if os.Getenv("VKGRAD_REQUIRE_GLSLC") == "1" {
			t.Fatal("glslc not found and VKGRAD_REQUIRE_GLSLC=1")
		}
		t.Skip("glslc not found; install glslc to check the committed SPIR-V")
	}
	srcs, err := filepath.Glob("*.comp")
	if err != nil || len(srcs) == 0 {
		t.Fatal("no *.comp sources found")
	}
	tmp := t.TempDir()
	for _, src := range srcs {
		name := strings.TrimSuffix(src, ".comp")
		if isKHR(name) {
			continue // TestSPIRVUpToDateKHR
		}
		out := filepath.Join(tmp, name+".spv")
		if msg, err := exec.Command(glslc, "--target-env=vulkan1.1", "-O", "-o", out, src).CombinedOutput(); err != nil {
			t.Errorf("%s does not compile: %v\n%s", src, err, msg)
			continue
		}
		checkCommitted(t, src, name, out, "glslc")
	}
	// Every embedded .spv must have its source.
	for _, n := range Names() {
		if _, err := os.Stat(n + ".comp"); err != nil {
			t.Errorf("%s.spv has no %s.comp source", n, n)
		}
	}
}

// TestSPIRVHeader checks that each embedded blob is SPIR-V (magic number, word-aligned).
func TestSPIRVHeader(t *testing.T) {
	names := Names()
	if len(names) < 8 {
		t.Fatalf("only %d shaders embedded: %v", len(names), names)
	}
	for _, n := range names {
		b, err := Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 20 || len(b)%4 != 0 || binary.LittleEndian.Uint32(b) != 0x07230203 {
			t.Errorf("%s.spv is not little-endian SPIR-V (%d bytes)", n, len(b))
		}
	}
	if _, err := Lookup("no-such-shader"); err == nil {
		t.Error("Lookup of a missing shader returned no error")
	}
}

// TestSPIRVValidates runs spirv-val on every embedded blob but the KHR ones, for the Vulkan 1.1
// environment the shaders are compiled for: kernels that no device in CI can run
// (matmul_coopmat needs VK_NV_cooperative_matrix) are checked at least this far.
func TestSPIRVValidates(t *testing.T) {
	val, err := exec.LookPath("spirv-val")
	if err != nil {
		if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" {
			t.Fatal("spirv-val not found and VKGRAD_REQUIRE_VULKAN=1")
		}
		t.Skip("spirv-val not found; install spirv-tools to validate the committed SPIR-V")
	}
	for _, n := range Names() {
		if isKHR(n) {
			continue // TestSPIRVValidatesKHR, with a spirv-val that knows the extension
		}
		validate(t, val, n)
	}
}

// The VK_KHR_cooperative_matrix kernels (names with "_khr") are compiled by the glslangValidator
// and spirv-opt of these versions (compile.go pins the same) and validated by that spirv-val:
// Debian bookworm's glslc and spirv-val predate the extension. .ci/shadertools installs them
// and prints their directory, which VKGRAD_SHADERTOOLS names.
const (
	glslangVersion    = "Glslang Version: 11:15.2.0"
	spirvToolsVersion = "SPIRV-Tools v2025.1 "
)

func isKHR(name string) bool { return strings.Contains(name, "_khr") }

// khrTool finds the pinned name (in VKGRAD_SHADERTOOLS, else on PATH), skipping the test where
// it is missing or of another version, and failing instead under VKGRAD_REQUIRE_GLSLC=1.
func khrTool(t *testing.T, name, version string) string {
	t.Helper()
	path := name
	if dir := os.Getenv("VKGRAD_SHADERTOOLS"); dir != "" {
		path = filepath.Join(dir, name)
	}
	why := ""
	if p, err := exec.LookPath(path); err != nil {
		why = name + " not found"
	} else if out, err := exec.Command(p, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), version) {
		why = p + " is not " + version
	} else {
		return p
	}
	if os.Getenv("VKGRAD_REQUIRE_GLSLC") == "1" {
		t.Fatalf("%s and VKGRAD_REQUIRE_GLSLC=1 (run .ci/shadertools and set VKGRAD_SHADERTOOLS to the directory it prints)", why)
	}
	t.Skipf("%s; run .ci/shadertools and set VKGRAD_SHADERTOOLS to the directory it prints to check the KHR kernels", why)
	return ""
}

// khrSources are the KHR kernels' sources; there is at least one.
func khrSources(t *testing.T) []string {
	srcs, _ := filepath.Glob("*_khr*.comp")
	if len(srcs) == 0 {
		t.Fatal("no *_khr*.comp sources found")
	}
	return srcs
}

// TestSPIRVUpToDateKHR is TestSPIRVUpToDate for the KHR kernels, built as compile.go builds
// them: glslangValidator without debug names, then spirv-opt -O.
func TestSPIRVUpToDateKHR(t *testing.T) {
	glslang := khrTool(t, "glslangValidator", glslangVersion)
	opt := khrTool(t, "spirv-opt", spirvToolsVersion)
	tmp := t.TempDir()
	for _, src := range khrSources(t) {
		name := strings.TrimSuffix(src, ".comp")
		raw, out := filepath.Join(tmp, name+".raw.spv"), filepath.Join(tmp, name+".spv")
		if msg, err := exec.Command(glslang, "-V", "--target-env", "vulkan1.1", "-g0", "-o", raw, src).CombinedOutput(); err != nil {
			t.Errorf("%s does not compile: %v\n%s", src, err, msg)
			continue
		}
		if msg, err := exec.Command(opt, "-O", "--target-env=vulkan1.1", raw, "-o", out).CombinedOutput(); err != nil {
			t.Errorf("spirv-opt fails on %s: %v\n%s", src, err, msg)
			continue
		}
		checkCommitted(t, src, name, out, "glslangValidator")
	}
}

// TestSPIRVValidatesKHR runs the pinned spirv-val on the KHR kernels' SPIR-V, for Vulkan 1.1.
func TestSPIRVValidatesKHR(t *testing.T) {
	val := khrTool(t, "spirv-val", spirvToolsVersion)
	checked := 0
	for _, n := range Names() {
		if !isKHR(n) {
			continue
		}
		validate(t, val, n)
		checked++
	}
	if checked == 0 {
		t.Error("no KHR kernel is embedded")
	}
}

// checkCommitted compares the committed SPIR-V of name with out, what compiler made of src.
func checkCommitted(t *testing.T, src, name, out, compiler string) {
	t.Helper()
	want, _ := os.ReadFile(out)
	got, err := Lookup(name)
	if err != nil {
		t.Errorf("%s has no committed %s.spv (run go generate ./shaders)", src, name)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s.spv is stale: it differs from %s's output for %s (run go generate ./shaders)", name, compiler, src)
	}
}

// validate runs the spirv-val at val on the embedded SPIR-V of name, for Vulkan 1.1.
func validate(t *testing.T, val, name string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".spv")
	b, _ := Lookup(name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(val, "--target-env", "vulkan1.1", path).CombinedOutput(); err != nil {
		t.Errorf("%s.spv fails spirv-val: %v\n%s", name, err, msg)
	}
}
