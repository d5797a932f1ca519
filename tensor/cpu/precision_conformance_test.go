package cpu_test

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestProductPrecisionConformance runs the check every tensor.ProductRounder passes (the
// Vulkan backend runs the same one).
func TestProductPrecisionConformance(t *testing.T) {
	backendtest.RunProductPrecision(t, func(t *testing.T) tensor.Backend { return cpu.New() })
}
