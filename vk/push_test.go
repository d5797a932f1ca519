package vk

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
)

// shaderInterface is what a compiled shader declares: the highest descriptor binding + 1 and
// the members of its push-constant block.
type shaderInterface struct{ bindings, push int }

// readInterface reads a shader's bindings and push-constant members from its SPIR-V.
func readInterface(spv []byte) (shaderInterface, error) {
	if len(spv)%4 != 0 || len(spv) < 20 || binary.LittleEndian.Uint32(spv) != 0x07230203 {
		return shaderInterface{}, fmt.Errorf("not little-endian SPIR-V")
	}
	const (
		opTypeStruct, opTypePointer, opVariable, opDecorate = 30, 32, 59, 71
		decorationBinding, storagePushConstant              = 33, 9
	)
	structs, pointers := map[uint32]int{}, map[uint32]uint32{}
	var si shaderInterface
	var pushPointer uint32
	for i := 5; i < len(spv)/4; {
		w := binary.LittleEndian.Uint32(spv[4*i:])
		op, n := w&0xffff, int(w>>16)
		if n == 0 || i+n > len(spv)/4 {
			return shaderInterface{}, fmt.Errorf("instruction at word %d runs past the end", i)
		}
		arg := func(k int) uint32 { return binary.LittleEndian.Uint32(spv[4*(i+k):]) }
		switch op {
		case opTypeStruct:
			structs[arg(1)] = n - 2
		case opTypePointer:
			pointers[arg(1)] = arg(3)
		case opVariable:
			if arg(3) == storagePushConstant {
				pushPointer = arg(1)
			}
		case opDecorate:
			if arg(2) == decorationBinding {
				si.bindings = max(si.bindings, int(arg(3))+1)
			}
		}
		i += n
	}
	if pushPointer != 0 {
		si.push = structs[pointers[pushPointer]]
	}
	return si, nil
}

var kernelLiteral = regexp.MustCompile(`Kernel\{Shader: "(\w+)", Bindings: (\d+), Push: (\d+)`)

// Every kernel the backend declares (and its subgroup variant) says the number of bindings and
// push-constant words its compiled shader declares: the Go side fills push constants by
// position, so a count off by one would shift every field after it.
func TestKernelsMatchTheirShaders(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kernelLiteral.FindAllStringSubmatch(string(src), -1) {
			bindings, _ := strconv.Atoi(m[2])
			push, _ := strconv.Atoi(m[3])
			names := []string{m[1]}
			if sg, ok := subgroupVariants[m[1]]; ok {
				names = append(names, sg)
			}
			for _, name := range names {
				spv, err := shaders.Lookup(name)
				if err != nil {
					t.Errorf("%s: kernel %s: %v", f, name, err)
					continue
				}
				si, err := readInterface(spv)
				if err != nil {
					t.Errorf("%s.spv: %v", name, err)
					continue
				}
				if si.bindings != bindings || si.push != push {
					t.Errorf("%s: kernel %s says %d bindings and %d push words, its shader declares %d and %d", f, name, bindings, push, si.bindings, si.push)
				}
				checked++
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d kernels: the pattern no longer finds the kernel declarations", checked)
	}
	t.Logf("%d kernels match their shaders", checked)
}
