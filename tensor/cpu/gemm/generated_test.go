package gemm

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor/cpu/internal/asmgen"
)

// TestAssemblyUpToDate reruns this package's assembly generators and fails when a committed
// .s differs from what they write, so generated assembly cannot be edited by hand unnoticed.
func TestAssemblyUpToDate(t *testing.T) {
	for _, err := range asmgen.Stale(".", t.TempDir()) {
		t.Error(err)
	}
}
