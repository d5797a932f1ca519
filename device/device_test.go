package device

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	b, reason, err := Open("cpu", Options{Threads: 1})
	if err != nil || b.Name() != "cpu" || !strings.Contains(reason, "1 thread") {
		t.Fatalf("cpu: %v %q %v", b, reason, err)
	}
	// auto never fails: it falls back to the CPU and says why.
	b, reason, err = Open("auto", Options{})
	if err != nil || b == nil || reason == "" {
		t.Fatalf("auto: %v %q %v", b, reason, err)
	}
	t.Logf("auto chose %s: %s", b.Name(), reason)
	for _, bad := range []string{"tpu", "vulkan:x", "cuda"} {
		if _, _, err := Open(bad, Options{}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("device %q", bad)) {
			t.Errorf("%q: error %v should name the device it was given", bad, err)
		}
	}
}

// TestExplicitVulkanNeverFallsBack: asking for Vulkan gives a Vulkan backend or an error, never
// the CPU.
func TestExplicitVulkanNeverFallsBack(t *testing.T) {
	b, _, err := Open("vulkan", Options{})
	if err != nil {
		if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" {
			t.Fatalf("VKGRAD_REQUIRE_VULKAN=1 but --device vulkan failed: %v", err)
		}
		t.Skipf("no Vulkan device: %v", err)
	}
	if !strings.HasPrefix(b.Name(), "vulkan:") {
		t.Errorf("--device vulkan gave %s", b.Name())
	}
	if _, _, err := Open("vulkan:99", Options{}); err == nil {
		t.Error("vulkan:99 opened")
	}
}
