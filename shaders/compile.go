//go:build ignore

// compile rebuilds every *.spv in this directory from its *.comp; run it through
// `go generate ./shaders`. The sources of the VK_KHR_cooperative_matrix kernels (names with
// "_khr") need a glslang newer than the glslc of Debian bookworm: they are compiled by the
// pinned glslangValidator and optimised by the pinned spirv-opt, found in the directory
// VKGRAD_SHADERTOOLS names (what .ci/shadertools prints) or else on PATH; the rest by glslc.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The tools' versions that the committed KHR SPIR-V comes from; shaders_test.go pins the same.
const (
	glslangVersion    = "Glslang Version: 11:15.2.0"
	spirvToolsVersion = "SPIRV-Tools v2025.1 "
)

func main() {
	srcs, err := filepath.Glob("*.comp")
	if err != nil || len(srcs) == 0 {
		fmt.Fprintln(os.Stderr, "compile: no *.comp files in the current directory")
		os.Exit(1)
	}
	failed := false
	var khr []string
	for _, src := range srcs {
		if strings.Contains(src, "_khr") {
			khr = append(khr, src)
			continue
		}
		out := strings.TrimSuffix(src, ".comp") + ".spv"
		if err := run("glslc", "--target-env=vulkan1.1", "-O", "-o", out, src); err != nil {
			fmt.Fprintf(os.Stderr, "compile: %s: %v\n", src, err)
			failed = true
		}
	}
	if len(khr) > 0 {
		if err := compileKHR(khr); err != nil {
			fmt.Fprintf(os.Stderr, "compile: %v\n", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// compileKHR compiles srcs with glslangValidator (no debug names) and optimises them with
// spirv-opt -O, the passes glslc -O runs.
func compileKHR(srcs []string) error {
	glslang, err := tool("glslangValidator", glslangVersion)
	if err != nil {
		return err
	}
	opt, err := tool("spirv-opt", spirvToolsVersion)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "vkgrad-khr")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, src := range srcs {
		name := strings.TrimSuffix(src, ".comp")
		raw := filepath.Join(tmp, name+".spv")
		if err := run(glslang, "-V", "--target-env", "vulkan1.1", "-g0", "-o", raw, src); err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
		if err := run(opt, "-O", "--target-env=vulkan1.1", raw, "-o", name+".spv"); err != nil {
			return fmt.Errorf("%s: %v", src, err)
		}
	}
	return nil
}

// tool finds name in VKGRAD_SHADERTOOLS or on PATH and checks that its --version output
// contains version.
func tool(name, version string) (string, error) {
	path := name
	if dir := os.Getenv("VKGRAD_SHADERTOOLS"); dir != "" {
		path = filepath.Join(dir, name)
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("the *_khr*.comp shaders need %s (%s): run .ci/shadertools and set VKGRAD_SHADERTOOLS to the directory it prints: %v", name, version, err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), version) {
		return "", fmt.Errorf("%s is not %s (the committed *_khr SPIR-V comes from that version): run .ci/shadertools and set VKGRAD_SHADERTOOLS to the directory it prints", path, version)
	}
	return path, nil
}

func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
