//go:build ignore

// compile rebuilds every *.spv in this directory from its *.comp with glslc; run it through
// `go generate ./shaders`.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	srcs, err := filepath.Glob("*.comp")
	if err != nil || len(srcs) == 0 {
		fmt.Fprintln(os.Stderr, "compile: no *.comp files in the current directory")
		os.Exit(1)
	}
	failed := false
	for _, src := range srcs {
		out := strings.TrimSuffix(src, ".comp") + ".spv"
		cmd := exec.Command("glslc", "--target-env=vulkan1.1", "-O", "-o", out, src)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "compile: %s: %v\n", src, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
