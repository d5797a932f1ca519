package vk

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// TestLlamaOpsParityWithCPU runs backendtest's Llama-family cases on Vulkan against the CPU
// backend, through the same variants as the fused ops (TestNNParityWithCPU).
func TestLlamaOpsParityWithCPU(t *testing.T) { runNNCases(t, backendtest.LlamaCases()) }
