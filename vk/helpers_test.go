package vk

import (
	"os"
	"sync"
	"testing"
)

var (
	testDevOnce   sync.Once
	testDev       *Device
	testDevErr    error
	testDevReason string
)

// testDeviceSpec is the --device value tests open: $VKGRAD_TEST_DEVICE, else "vulkan", which
// takes a GPU when there is one and lavapipe otherwise.
func testDeviceSpec() string {
	if s := os.Getenv("VKGRAD_TEST_DEVICE"); s != "" {
		return s
	}
	return "vulkan"
}

// requireVulkan skips the test when Vulkan is unavailable, unless VKGRAD_REQUIRE_VULKAN=1.
func requireVulkan(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" || !IsUnavailable(err) {
		t.Fatalf("Vulkan unavailable: %v", err)
	}
	t.Skipf("Vulkan unavailable (set VKGRAD_REQUIRE_VULKAN=1 to fail instead): %v", err)
}

// device returns the package's shared test device and fails the test on any validation
// message the test causes (with VKGRAD_VALIDATION=1).
func device(t testing.TB) *Device {
	t.Helper()
	testDevOnce.Do(func() {
		testDev, testDevReason, testDevErr = OpenDevice(testDeviceSpec())
	})
	requireVulkan(t, testDevErr)
	before := len(testDev.Instance().ValidationMessages())
	t.Cleanup(func() {
		if err := testDev.Sync(); err != nil {
			t.Errorf("Sync after test: %v", err)
		}
		for _, m := range testDev.Instance().ValidationMessages()[before:] {
			t.Errorf("validation: %s", m)
		}
	})
	return testDev
}

func TestMain(m *testing.M) {
	// Keep the pipeline cache of test runs out of the user's cache directory.
	dir, err := os.MkdirTemp("", "vkgrad-cache")
	if err == nil {
		os.Setenv("VKGRAD_CACHE_DIR", dir)
		defer os.RemoveAll(dir)
	}
	code := m.Run()
	if testDev != nil {
		inst := testDev.Instance()
		before := len(inst.ValidationMessages())
		if err := testDev.Close(); err != nil && code == 0 {
			println("closing test device:", err.Error())
			code = 1
		}
		// Messages at teardown report leaked or misused objects.
		for _, m := range inst.ValidationMessages()[before:] {
			println("validation at close:", m)
			code = 1
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
