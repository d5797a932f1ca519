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

// TestSPIRVUpToDate recompiles each .comp and fails when the committed .spv differs, so a
// shader edited without `go generate ./shaders` cannot go unnoticed.
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
		out := filepath.Join(tmp, name+".spv")
		if msg, err := exec.Command(glslc, "--target-env=vulkan1.1", "-O", "-o", out, src).CombinedOutput(); err != nil {
			t.Errorf("%s does not compile: %v\n%s", src, err, msg)
			continue
		}
		want, _ := os.ReadFile(out)
		got, err := Lookup(name)
		if err != nil {
			t.Errorf("%s has no committed %s.spv (run go generate ./shaders)", src, name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s.spv is stale: it differs from glslc's output for %s (run go generate ./shaders)", name, src)
		}
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

// TestSPIRVValidates runs spirv-val on every embedded blob, for the Vulkan 1.1 environment the
// shaders are compiled for: kernels that no device in CI can run (matmul_coopmat needs
// VK_NV_cooperative_matrix) are checked at least this far.
func TestSPIRVValidates(t *testing.T) {
	val, err := exec.LookPath("spirv-val")
	if err != nil {
		if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" {
			t.Fatal("spirv-val not found and VKGRAD_REQUIRE_VULKAN=1")
		}
		t.Skip("spirv-val not found; install spirv-tools to validate the committed SPIR-V")
	}
	for _, n := range Names() {
		path := filepath.Join(t.TempDir(), n+".spv")
		b, _ := Lookup(n)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(val, "--target-env", "vulkan1.1", path).CombinedOutput(); err != nil {
			t.Errorf("%s.spv fails spirv-val: %v\n%s", n, err, msg)
		}
	}
}
