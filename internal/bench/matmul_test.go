package bench

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestTimeMatmulBatchesShortProducts: a product of microseconds is timed in batches of calls,
// as many as lasted matmulBatchTime, at least steps of them, so that a GPU's submission
// latency is not what each sample measures; every sample is a call's share of its batch.
func TestTimeMatmulBatchesShortProducts(t *testing.T) {
	s := matmulShape{name: "tiny", p: tensor.MatMulParams{M: 4, N: 8, K: 8, TransB: true}, a: 32, b: 64, o: 32}
	const steps = 7
	times, calls, err := timeMatmul(cpu.New(), s, steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) < steps || calls < 10*len(times) {
		t.Errorf("%d samples of %d calls in all: want at least %d samples of many calls each", len(times), calls, steps)
	}
	// The first sample is the batch the size was grown to, which lasted matmulBatchTime or more;
	// later ones may be shorter on a machine whose load changes.
	batch := calls / len(times)
	if first := times[0] * float64(batch); first < matmulBatchTime.Seconds()*(1-1e-9) {
		t.Errorf("the first batch of %d calls lasted %.3g s, want %v or more", batch, first, matmulBatchTime)
	}
	for _, x := range times {
		if !(x > 0) {
			t.Errorf("sample %.3g s a call in batches of %d: want a positive share of its batch", x, batch)
		}
	}
}
