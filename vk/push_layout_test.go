package vk

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
)

// pushStructs names the push-constant struct of every shader (push.go); the subgroup variant
// of a listed shader (subgroupVariants) shares its struct.
var pushStructs = []struct {
	push    any
	shaders []string
}{
	{fillPush{}, []string{"fill", "fill_vec4"}},
	{copyPush{}, []string{"copy", "copy_vec4"}},
	{binaryPush{}, []string{"add", "mul"}},
	{axpyPush{}, []string{"axpy"}},
	{scalePush{}, []string{"scale"}},
	{sumPush{}, []string{"sum", "sumsquares", "sum_vec4", "sumsquares_vec4"}},
	{peakFMAPush{}, []string{"peak_fma", "peak_coopmat", "peak_coopmat_khr"}},
	{layerNormForwardPush{}, []string{"layernorm_forward"}},
	{residualLayerNormForwardPush{}, []string{"residual_layernorm_forward"}},
	{layerNormBackwardPush{}, []string{"layernorm_backward"}},
	{layerNormPartialPush{}, []string{"layernorm_backward_partial"}},
	{layerNormColsumPush{}, []string{"layernorm_backward_colsum"}},
	{geluForwardPush{}, []string{"gelu_forward"}},
	{geluBackwardPush{}, []string{"gelu_backward", "gelu_backward_vec4"}},
	{encoderForwardPush{}, []string{"encoder_forward"}},
	{encoderWtePush{}, []string{"encoder_backward_wte", "encoder_backward_wte_vec4"}},
	{encoderWpePush{}, []string{"encoder_backward_wpe"}},
	{crossEntropyForwardPush{}, []string{"crossentropy_forward", "crossentropy_forward_vec4"}},
	{crossEntropyFusedPush{}, []string{"crossentropy_fused", "crossentropy_fused_vec4"}},
	{crossEntropyBackwardPush{}, []string{"crossentropy_backward"}},
	{logSoftmaxGatherPush{}, []string{"logsoftmax_gather"}},
	{logSoftmaxGatherBackwardPush{}, []string{"logsoftmax_gather_backward"}},
	{dropoutPush{}, []string{"dropout"}},
	{rmsNormForwardPush{}, []string{"rmsnorm_forward"}},
	{residualRMSNormForwardPush{}, []string{"residual_rmsnorm_forward"}},
	{rmsNormBackwardPush{}, []string{"rmsnorm_backward"}},
	{rmsNormBackwardWeightPush{}, []string{"rmsnorm_backward_weight"}},
	{ropePush{}, []string{"rope"}},
	{swigluForwardPush{}, []string{"swiglu_forward"}},
	{swigluBackwardPush{}, []string{"swiglu_backward"}},
	{embeddingForwardPush{}, []string{"embedding_forward"}},
	{packQKVPush{}, []string{"pack_qkv"}},
	{packQKVBackwardPush{}, []string{"pack_qkv_backward"}},
	{flashForwardPush{}, []string{"attention_flash_forward_h64", "attention_flash_forward_h128", "attention_broadcast_forward", "attention_flash_rb_forward_h64", "attention_flash_rb_forward_h128"}},
	{flashBackwardPush{}, []string{"attention_flash_query_h64", "attention_flash_query_h128", "attention_flash_key_h64", "attention_flash_key_h128", "attention_broadcast_query", "attention_broadcast_key",
		"attention_flash_rb_query_h64", "attention_flash_rb_query_h128", "attention_flash_rb_key_h64", "attention_flash_rb_key_h128"}},
	{kvCachePush{}, []string{"attention_kvcache"}},
	{matmulPush{}, []string{"matmul", "matmul_direct", "matmul_broadcast"}},
	{matmulTiledPush{}, []string{"matmul_tiled", "matmul_tiled_vec4", "matmul_tiled_round", "matmul_tiled_vec4_round", "matmul_coopmat", "matmul_coopmat_vec4",
		"matmul_coopmat_khr", "matmul_coopmat_khr_vec4"}},
	{splitKReducePush{}, []string{"matmul_splitk_reduce"}},
	{biasBackwardPush{}, []string{"bias_backward", "bias_backward_vec4"}},
	{adamwPush{}, []string{"adamw", "adamw_vec4"}},
}

// pushMember is one member of a push-constant block: its name (GLSL's, or the Go field's),
// byte offset and 32-bit kind.
type pushMember struct {
	name   string
	offset uintptr
	kind   reflect.Kind
}

// spirvString decodes a literal string operand (nul-terminated, packed little-endian).
func spirvString(words []uint32) string {
	var b []byte
	for _, w := range words {
		for k := 0; k < 4; k++ {
			c := byte(w >> (8 * k))
			if c == 0 {
				return string(b)
			}
			b = append(b, c)
		}
	}
	return string(b)
}

// readPushBlock reads the members of a shader's push-constant block: the struct that the
// PushConstant variable points to, its members' Offset decorations and scalar types, and
// their names where the module keeps OpMemberName (glslc -O strips them: names are "").
func readPushBlock(spv []byte) ([]pushMember, error) {
	const (
		opMemberName, opTypeInt, opTypeFloat, opTypeStruct = 6, 21, 22, 30
		opTypePointer, opVariable, opMemberDecorate        = 32, 59, 72
		decorationOffset, storagePushConstant              = 35, 9
	)
	kinds := map[uint32]reflect.Kind{}
	structs, pointers := map[uint32][]uint32{}, map[uint32]uint32{}
	names, offsets := map[[2]uint32]string{}, map[[2]uint32]uintptr{}
	var pushPointer uint32
	err := spirvInstructions(spv, func(op uint32, a []uint32) {
		switch {
		case op == opTypeInt && a[1] == 32 && a[2] == 0:
			kinds[a[0]] = reflect.Uint32
		case op == opTypeInt && a[1] == 32:
			kinds[a[0]] = reflect.Int32
		case op == opTypeFloat && a[1] == 32:
			kinds[a[0]] = reflect.Float32
		case op == opTypeStruct:
			structs[a[0]] = a[1:]
		case op == opTypePointer:
			pointers[a[0]] = a[2]
		case op == opVariable && a[2] == storagePushConstant:
			pushPointer = a[0]
		case op == opMemberName:
			names[[2]uint32{a[0], a[1]}] = spirvString(a[2:])
		case op == opMemberDecorate && a[2] == decorationOffset:
			offsets[[2]uint32{a[0], a[1]}] = uintptr(a[3])
		}
	})
	if err != nil {
		return nil, err
	}
	if pushPointer == 0 {
		return nil, nil
	}
	block := pointers[pushPointer]
	members := make([]pushMember, len(structs[block]))
	for i, typ := range structs[block] {
		key := [2]uint32{block, uint32(i)}
		offset, ok := offsets[key]
		if !ok {
			return nil, fmt.Errorf("push-constant member %d has no Offset", i)
		}
		kind, ok := kinds[typ]
		if !ok {
			kind = reflect.Invalid // not a 32-bit scalar
		}
		members[i] = pushMember{name: names[key], offset: offset, kind: kind}
	}
	return members, nil
}

// goPushMembers lists the fields of a push-constant struct at their byte offsets, the fields
// of an embedded struct in its place.
func goPushMembers(t reflect.Type, base uintptr) []pushMember {
	var out []pushMember
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, goPushMembers(f.Type, base+f.Offset)...)
			continue
		}
		out = append(out, pushMember{name: f.Name, offset: base + f.Offset, kind: f.Type.Kind()})
	}
	return out
}

// goFieldName is the Go field name of a GLSL member (push.go): each '_'-separated part with
// its first letter upper-cased, joined.
func goFieldName(glsl string) string {
	var b strings.Builder
	for _, part := range strings.Split(glsl, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// comparePush lists how a Go struct differs from a block's members: their count, the struct's
// size, and each member's offset, kind and (where the block has names) name.
func comparePush(t reflect.Type, block []pushMember) []string {
	var diffs []string
	fields := goPushMembers(t, 0)
	if len(fields) != len(block) {
		diffs = append(diffs, fmt.Sprintf("%d fields, the block has %d members", len(fields), len(block)))
	}
	if want := uintptr(4 * len(block)); t.Size() != want {
		diffs = append(diffs, fmt.Sprintf("%d bytes, the block %d", t.Size(), want))
	}
	for i := range min(len(fields), len(block)) {
		f, m := fields[i], block[i]
		if f.offset != m.offset {
			diffs = append(diffs, fmt.Sprintf("field %s at byte %d, member %d (%s) at %d", f.name, f.offset, i, m.name, m.offset))
		}
		if f.kind != m.kind {
			diffs = append(diffs, fmt.Sprintf("field %s is %v, member %d (%s) is %v", f.name, f.kind, i, m.name, m.kind))
		}
		if m.name != "" && f.name != goFieldName(m.name) {
			diffs = append(diffs, fmt.Sprintf("field %s, member %d is %s (want %s)", f.name, i, m.name, goFieldName(m.name)))
		}
	}
	return diffs
}

// namedBlocks compiles each shader's source without optimisation, which keeps the member
// names that the committed (optimised) SPIR-V lacks, and returns its push-constant block.
// It returns nil when glslc is missing, an error under VKGRAD_REQUIRE_GLSLC=1 (CI sets it; a
// GPU machine running the tests may have a driver and no shader compiler).
func namedBlocks(t *testing.T, names []string) map[string][]pushMember {
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		if os.Getenv("VKGRAD_REQUIRE_GLSLC") == "1" {
			t.Fatal("glslc not found and VKGRAD_REQUIRE_GLSLC=1")
		}
		t.Log("glslc not found: checking offsets and kinds, not names")
		return nil
	}
	glslang := khrCompiler()
	tmp := t.TempDir()
	blocks := make([][]pushMember, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for i, name := range names {
		khr := strings.Contains(name, "_khr")
		if khr && glslang == "" {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out := filepath.Join(tmp, name+".spv")
			src := filepath.Join("..", "shaders", name+".comp")
			cmd := exec.Command(glslc, "--target-env=vulkan1.1", "-o", out, src)
			if khr {
				cmd = exec.Command(glslang, "-V", "--target-env", "vulkan1.1", "-o", out, src)
			}
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s does not compile: %v\n%s", src, err, msg)
				return
			}
			spv, err := os.ReadFile(out)
			if err == nil {
				blocks[i], err = readPushBlock(spv)
			}
			if err != nil {
				t.Errorf("%s: %v", out, err)
			}
		})
	}
	wg.Wait()
	named := map[string][]pushMember{}
	for i, name := range names {
		if !strings.Contains(name, "_khr") || glslang != "" {
			named[name] = blocks[i]
		}
	}
	return named
}

// khrCompiler is a glslangValidator that compiles the VK_KHR_cooperative_matrix kernels (whose
// names have "_khr"; glslc predates the extension): VKGRAD_SHADERTOOLS's, else one on PATH
// that knows the extension, else "" and their members are checked by offset and kind alone.
func khrCompiler() string {
	path := "glslangValidator"
	if dir := os.Getenv("VKGRAD_SHADERTOOLS"); dir != "" {
		path = filepath.Join(dir, path)
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return ""
	}
	probe := "#version 450\n#extension GL_KHR_cooperative_matrix : require\nvoid main() {}\n"
	cmd := exec.Command(path, "--stdin", "-S", "comp", "-V", "-o", os.DevNull)
	cmd.Stdin = strings.NewReader(probe)
	if cmd.Run() != nil {
		return ""
	}
	return path
}

// Every shader's push-constant block has a Go struct in push.go with the same members, in
// order, at the same offsets, of the same 32-bit kinds, named by push.go's rule: the ops fill
// the structs by name and pushOf hands their bytes to the shader as they lie.
func TestPushStructsMatchTheirShaders(t *testing.T) {
	structOf := map[string]reflect.Type{}
	for _, p := range pushStructs {
		for _, s := range p.shaders {
			structOf[s] = reflect.TypeOf(p.push)
			if sg, ok := subgroupVariants[s]; ok {
				structOf[sg] = reflect.TypeOf(p.push)
			}
		}
	}
	all := shaders.Names()
	for _, name := range all {
		if structOf[name] == nil {
			t.Errorf("shader %s has no push-constant struct in pushStructs", name)
		}
	}
	named := namedBlocks(t, all)
	checked := 0
	for _, name := range all {
		typ := structOf[name]
		spv, err := shaders.Lookup(name)
		if err != nil || typ == nil {
			continue
		}
		block, err := readPushBlock(spv)
		if err != nil {
			t.Errorf("%s.spv: %v", name, err)
			continue
		}
		if withNames, ok := named[name]; named != nil && ok {
			if len(withNames) != len(block) {
				t.Errorf("%s: the unoptimised build has %d push members, the committed %d", name, len(withNames), len(block))
				continue
			}
			for i := range block {
				block[i].name = withNames[i].name
			}
		}
		for _, d := range comparePush(typ, block) {
			t.Errorf("%s: %v: %s", name, typ, d)
		}
		checked++
	}
	if checked < len(all) || checked < 60 {
		t.Errorf("checked %d of %d shaders", checked, len(all))
	}
	t.Logf("checked %d shaders against their push-constant structs", checked)
}

// comparePush reports each kind of mistake a struct can make against a real block.
func TestComparePushFindsMistakes(t *testing.T) {
	spv, err := shaders.Lookup("axpy")
	if err != nil {
		t.Fatal(err)
	}
	block, err := readPushBlock(spv)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"n", "off_y", "off_x", "alpha"} {
		block[i].name = n
	}
	if d := comparePush(reflect.TypeOf(axpyPush{}), block); len(d) != 0 {
		t.Fatalf("axpyPush differs from axpy's block: %v", d)
	}
	type swapped struct {
		N, OffX, OffY uint32
		Alpha         float32
	}
	type wrongKind struct{ N, OffY, OffX, Alpha uint32 }
	type missing struct {
		N, OffY uint32
		Alpha   float32
	}
	type narrow struct {
		N, OffY, OffX uint32
		Pad           uint16
		Alpha         float32
	}
	for name, typ := range map[string]reflect.Type{
		"swapped": reflect.TypeOf(swapped{}), "wrongKind": reflect.TypeOf(wrongKind{}),
		"missing": reflect.TypeOf(missing{}), "narrow": reflect.TypeOf(narrow{}),
	} {
		if d := comparePush(typ, block); len(d) == 0 {
			t.Errorf("%s: no difference found", name)
		} else {
			t.Logf("%s: %v", name, d)
		}
	}
}

// pushOf views exactly the struct's words, in field order, float fields as their bits.
func TestPushOf(t *testing.T) {
	p := axpyPush{N: 7, OffY: 1, OffX: 2, Alpha: 0.5}
	w := pushOf(&p)
	if want := []uint32{7, 1, 2, math.Float32bits(0.5)}; !reflect.DeepEqual(w, want) {
		t.Errorf("pushOf = %v, want %v", w, want)
	}
	m := matmulTiledPush{matmulPush: matmulPush{M: 3, Flags: 9}, Ksplit: 5}
	if w := pushOf(&m); len(w) != 18 || w[0] != 3 || w[13] != 9 || w[17] != 5 {
		t.Errorf("pushOf(matmulTiledPush) = %v", w)
	}
	if w := pushOf(&m.matmulPush); len(w) != 16 {
		t.Errorf("pushOf(matmulPush) has %d words, want 16", len(w))
	}
}
