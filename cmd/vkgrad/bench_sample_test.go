package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestBenchSampleBF16CountsWeightCopies checks that bench sample in bf16 on the CPU reports
// the decoder's bfloat16 weight copies (two bytes per weight a step multiplies) and reads a
// step's bytes as the float32 weights less the copies' savings.
func TestBenchSampleBF16CountsWeightCopies(t *testing.T) {
	be := cpu.New()
	if err := be.SetProductPrecision(tensor.BF16); err != nil {
		t.Fatal(err)
	}
	if _, ok := tensor.HalfWeightsFor(be); !ok {
		t.Skip("this build's CPU kernel reads no bfloat16 weights in place (purego or arm64)")
	}
	out, err := runCLI("bench", "sample", "--preset", "tiny", "--batches", "2", "--tokens", "4", "--steps", "1", "--json", "--device", "cpu", "--precision", "bf16", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out[strings.Index(out, "{"):])), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	cfg, _ := gpt2.Preset("tiny")
	C := cfg.Channels
	want := 2 * float64(cfg.NumLayers*12*C*C+cfg.PaddedVocabSize*C)
	copies, _ := r["weight_copy_bytes"].(float64)
	weights, _ := r["weight_bytes"].(float64)
	if copies != want {
		t.Fatalf("weight_copy_bytes %v, want %v", r["weight_copy_bytes"], want)
	}
	row := r["rows"].([]any)[0].(map[string]any)
	steps, gbps := row["steps_per_s"].(float64), row["weight_gb_per_s"].(float64)
	if wantGB := steps * (weights - copies) / 1e9; math.Abs(gbps-wantGB) > 1e-9*wantGB {
		t.Fatalf("weight_gb_per_s %v at %v steps/s, want %v", gbps, steps, wantGB)
	}
}
