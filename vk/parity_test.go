package vk

import (
	"fmt"
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
)

// The parity tests run package backendtest's conformance suites against the CPU reference,
// on Vulkan backends of the shared test device: with the device's limits, and in variants
// that force the paths large tensors and other devices take.

// newVulkan returns a function opening a backend on d, for backendtest.
func newVulkan(d *Device) func(t *testing.T) tensor.Backend {
	return func(*testing.T) tensor.Backend { return NewBackendOn(d) }
}

// tinyLimits is a backend on d with storage windows of the case's window and 3 workgroups,
// which forces the chunking by window and the grid-stride loops on small inputs.
func tinyLimits(d *Device) backendtest.Variant {
	return backendtest.Variant{Name: "limits=tiny", New: func(t *testing.T, window int) tensor.Backend {
		b := NewBackendOn(d)
		b.maxGroups, b.maxChunk = 3, window
		return b
	}}
}

// rowWidth is a backend on d whose row-reduction kernels run workgroups of w invocations,
// the widths of other devices' subgroups.
func rowWidth(d *Device, w uint32) backendtest.Variant {
	return backendtest.Variant{Name: fmt.Sprintf("rows of %d invocations", w), New: func(t *testing.T, window int) tensor.Backend {
		b := NewBackendOn(d)
		b.rowWG = w
		return b
	}}
}

// TestParityWithCPU runs the elementwise ops and the sums against the CPU backend: bitwise
// for the elementwise ops, within float32 rounding for Axpy and the sums.
func TestParityWithCPU(t *testing.T) {
	backendtest.RunElementwise(t, newVulkan(device(t)), backendtest.Options{})
}
