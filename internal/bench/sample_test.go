package bench

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor/cpu"
	"github.com/vkgrad/vkgrad/tensor/cpu/gemm"
)

// Sample reads each batch against both limits of decoding: the weight bytes per second
// against the read bandwidth and the work per second against the FMA peak, measured in the
// same process; the work is the tokens' (tokens/s times each token's FLOPs at its position).
func TestSampleFractions(t *testing.T) {
	cfg, _ := gpt2.Preset("tiny")
	r, err := Sample(cpu.New(), Shape{GPT2: cfg}, SampleOptions{Batches: []int{1, 4}, Tokens: 4, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := gpt2Cost(cfg)
	perToken := (c.tokenFLOPs(17)+c.tokenFLOPs(18)+c.tokenFLOPs(19))/3 + 2*c.head
	peakG, _ := r["peak_gflops"].(float64)
	rows, _ := r["rows"].([]map[string]any)
	if peakG <= 0 || len(rows) != 2 {
		t.Fatalf("peak %v GFLOP/s, rows %v", peakG, r["rows"])
	}
	if r["peak_kernel"] != gemm.KernelName() {
		t.Errorf("peak_kernel %v, want the GEMM's kernel set %q", r["peak_kernel"], gemm.KernelName())
	}
	for _, row := range rows {
		g, tps := row["gflops"].(float64), row["tokens_per_s"].(float64)
		if math.Abs(g-tps*perToken/1e9) > 1e-9*g || math.Abs(row["peak_fraction"].(float64)-g/peakG) > 1e-9*g/peakG || !(row["bandwidth_fraction"].(float64) > 0) {
			t.Errorf("batch %v: %v GFLOP/s at %v tokens/s (want %v), peak fraction %v, bandwidth fraction %v", row["batch"], g, tps, tps*perToken/1e9, row["peak_fraction"], row["bandwidth_fraction"])
		}
	}
}
