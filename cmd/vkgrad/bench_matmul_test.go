package main

import (
	"testing"

	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestTimeMatmulBatchesShortProducts: a product of microseconds is timed in batches of calls
// lasting matmulBatchTime or more, at least --steps of them, so that a GPU's submission
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
	batch := calls / len(times)
	for _, x := range times {
		if !(x > 0) || x*float64(batch) < matmulBatchTime.Seconds()/2 {
			t.Errorf("sample %.3g s a call in batches of %d: want a positive share of a batch of %v or more", x, batch, matmulBatchTime)
		}
	}
}
