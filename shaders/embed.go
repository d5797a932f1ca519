// Package shaders embeds vkgrad's compute shaders, compiled to SPIR-V, for the Vulkan backend.
//
// The GLSL sources (*.comp, with shared code in *.glsl) are compiled by glslc into SPIR-V
// (*.spv) that is committed, so users need no shader compiler. The VK_KHR_cooperative_matrix
// kernels (*_khr*.comp) are compiled by a pinned, newer glslangValidator (see compile.go). [Lookup] returns one shader's
// SPIR-V by name and [Names] lists them.
//
// # Conventions
//
// Every shader follows these conventions:
//   - layout(local_size_x_id = 0, ...) in: the runtime sets the workgroup size through
//     specialization constants 0..2.
//   - set 0 holds bindings 0..n, each a `buffer` array of float, int or uint (or their
//     four-element vectors).
//   - a push-constant block holds element counts, dimensions and the element offset of every
//     binding: descriptor offsets must be aligned to minStorageBufferOffsetAlignment, so the
//     runtime binds an aligned window and passes the rest of the offset here.
//   - one-dimensional elementwise kernels loop with a grid stride, so any n fits in the
//     device's maximum workgroup count.
//   - kernels that reduce across a workgroup keep their body in X.glsl and use groupSum,
//     groupSum2 and groupMax from reduce.glsl; X.comp compiles it with a shared-memory tree,
//     X_sg.comp (REDUCE_SUBGROUP) with subgroup arithmetic, and the runtime picks one.
package shaders

//go:generate go run compile.go

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.spv
var files embed.FS

// Lookup returns the SPIR-V of the named shader ("add" for add.spv).
func Lookup(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("shaders: no shader named %q", name)
	}
	return b, nil
}

// Names lists the embedded shaders, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".spv"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
