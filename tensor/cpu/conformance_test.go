package cpu_test

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/backendtest"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestConformance runs the backend suite on CPU backends of one and of three workers against
// the reference (a backend of GOMAXPROCS workers), asking for the same bits: the package
// promises results independent of the thread count.
func TestConformance(t *testing.T) {
	withThreads := func(n int) func(t *testing.T) tensor.Backend {
		return func(t *testing.T) tensor.Backend { return cpu.NewWithThreads(n) }
	}
	backendtest.Run(t, withThreads(1), backendtest.Options{
		Bitwise:  true,
		Variants: []backendtest.Variant{{Name: "3 workers", New: func(t *testing.T, window int) tensor.Backend { return cpu.NewWithThreads(3) }}},
	})
}
