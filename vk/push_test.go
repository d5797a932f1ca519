package vk

import (
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
	const (
		opTypeStruct, opTypePointer, opVariable, opDecorate = 30, 32, 59, 71
		decorationBinding, storagePushConstant              = 33, 9
	)
	structs, pointers := map[uint32]int{}, map[uint32]uint32{}
	var si shaderInterface
	var pushPointer uint32
	err := spirvInstructions(spv, func(op uint32, a []uint32) {
		switch op {
		case opTypeStruct:
			structs[a[0]] = len(a) - 1
		case opTypePointer:
			pointers[a[0]] = a[2]
		case opVariable:
			if a[2] == storagePushConstant {
				pushPointer = a[0]
			}
		case opDecorate:
			if a[1] == decorationBinding {
				si.bindings = max(si.bindings, int(a[2])+1)
			}
		}
	})
	if err != nil {
		return shaderInterface{}, err
	}
	if pushPointer != 0 {
		si.push = structs[pointers[pushPointer]]
	}
	return si, nil
}

var kernelLiteral = regexp.MustCompile(`Kernel\{Shader: "(\w+)", Bindings: (\d+), Push: (\d+)`)

// Every kernel the backend declares (and its subgroup variant) says the number of bindings and
// push-constant words its compiled shader declares: Dispatch holds the push struct's size to
// that count (TestPushStructsMatchTheirShaders checks the structs themselves).
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
