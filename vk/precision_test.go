package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestProductPrecision: in bf16 and fp16 the products round their operands exactly as
// tensor.RoundBfloat16 and tensor.RoundFloat16 do, on whichever kernel the device runs them
// (matmul_tiled's rounding flags, or the cooperative-matrix kernel in fp16), split along K too.
func TestProductPrecision(t *testing.T) {
	t.Cleanup(func() { mmForceSplits = 0 })
	for _, splits := range []int{0, 3} {
		mmForceSplits = splits
		backendtest.RunProductPrecision(t, func(t *testing.T) tensor.Backend { return NewBackendOn(device(t)) })
	}
}

// TestProductPrecisionKernels: fp32 keeps the device's float32 kernel, bf16 takes the tiled
// kernel even where overrides ask for one that cannot round, and fp16 takes the
// cooperative-matrix kernel where the device has it.
func TestProductPrecisionKernels(t *testing.T) {
	vb := NewBackendOn(device(t))
	defer vb.Close()
	fp32 := vb.mmShader()
	t.Setenv("VKGRAD_MATMUL_KERNEL", "matmul_direct")
	for _, c := range []struct {
		p    tensor.Precision
		want string
	}{{tensor.BF16, "matmul_tiled"}, {tensor.FP16, "matmul_tiled"}, {tensor.FP32, "matmul_direct"}} {
		if err := vb.SetProductPrecision(c.p); err != nil {
			t.Fatal(err)
		}
		want := c.want
		if c.p == tensor.FP16 && vb.dev.coopMat != nil {
			want = mmCoopMatKernel
		}
		if got := vb.mmShader(); got != want {
			t.Errorf("%v with VKGRAD_MATMUL_KERNEL=matmul_direct: %s, want %s", c.p, got, want)
		}
	}
	t.Setenv("VKGRAD_MATMUL_KERNEL", "")
	if got := vb.mmShader(); got != fp32 {
		t.Errorf("back in fp32: %s, want %s", got, fp32)
	}
	if err := vb.SetProductPrecision(tensor.Precision(7)); err == nil {
		t.Error("an unknown precision was accepted")
	}
}
