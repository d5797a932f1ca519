package testutil

import (
	"os"
	"sync"
	"testing"

	"github.com/vkgrad/vkgrad/vk"
)

var (
	vkOnce    sync.Once
	vkBackend *vk.Backend
	vkErr     error
)

// Vulkan returns a shared Vulkan backend for tests outside package vk ($VKGRAD_TEST_DEVICE,
// default "vulkan", which takes lavapipe when no GPU is present). It skips the test when Vulkan
// is unavailable, unless VKGRAD_REQUIRE_VULKAN=1, and fails it on any validation message
// (with VKGRAD_VALIDATION=1).
func Vulkan(t testing.TB) *vk.Backend {
	t.Helper()
	vkOnce.Do(func() {
		spec := os.Getenv("VKGRAD_TEST_DEVICE")
		if spec == "" {
			spec = "vulkan"
		}
		vkBackend, vkErr = vk.NewBackend(spec)
	})
	if vkErr != nil {
		if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" || !vk.IsUnavailable(vkErr) {
			t.Fatalf("Vulkan unavailable: %v", vkErr)
		}
		t.Skipf("Vulkan unavailable (set VKGRAD_REQUIRE_VULKAN=1 to fail instead): %v", vkErr)
	}
	inst := vkBackend.Device().Instance()
	before := len(inst.ValidationMessages())
	t.Cleanup(func() {
		if err := vkBackend.Sync(); err != nil {
			t.Errorf("Vulkan sync after test: %v", err)
		}
		for _, m := range inst.ValidationMessages()[before:] {
			t.Errorf("validation: %s", m)
		}
	})
	return vkBackend
}
