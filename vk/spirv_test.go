package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/shaders"
)

// TestWritableBindings reads which bindings compiled shaders may write: AdamW writes the
// parameters and both moments but reads the gradient and the norm; a matmul writes its output
// and the GELU of it (binding 4), not its operands or bias; RMSNorm's weight gradient adds
// into binding 0.
func TestWritableBindings(t *testing.T) {
	for _, c := range []struct {
		shader string
		want   uint32
	}{
		{"adamw", 0b01101},
		{"adamw_vec4", 0b01101},
		{"matmul_tiled", 0b10001},
		{"rmsnorm_backward_weight", 0b0001},
		{"sum", 0b01},
	} {
		spv, err := shaders.Lookup(c.shader)
		if err != nil {
			t.Fatal(err)
		}
		got, err := writableBindings(spv)
		if err != nil {
			t.Fatalf("%s: %v", c.shader, err)
		}
		if got != c.want {
			t.Errorf("%s: writable bindings %b, want %b", c.shader, got, c.want)
		}
	}
	if _, err := writableBindings([]byte("not spir-v")); err == nil {
		t.Error("writableBindings read text as SPIR-V")
	}
}
