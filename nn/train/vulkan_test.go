package train

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/vkgrad/vkgrad/internal/allocs"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestCPUAndVulkanTrainAlike: 20 training steps from the same parameters on the CPU and on
// Vulkan give losses within 1e-3 of each other at every step, in each precision of the products:
// both backends round the operands alike (bf16 and fp16 in the tiled kernel, or fp16 on a
// device's cooperative matrices) and sum in float32, so only the order of the sums differs.
func TestCPUAndVulkanTrainAlike(t *testing.T) {
	vkb := testutil.Vulkan(t)
	init, err := gpt2.New(cpu.New(), testCfg)
	if err != nil {
		t.Fatal(err)
	}
	init.InitRandom(5)
	params, _ := init.ParamsToHost()
	// The backend is shared by the package's tests: leave its products in float32.
	t.Cleanup(func() { vkb.SetProductPrecision(tensor.FP32) })
	for _, prec := range []string{"fp32", "bf16", "fp16"} {
		t.Run(prec, func(t *testing.T) {
			cfg := testConfig()
			cfg.Steps, cfg.Precision = 20, prec
			a, b := trainLosses(t, cpu.New(), params, cfg), trainLosses(t, vkb, params, cfg)
			worst := 0.0
			for i := range a {
				d := math.Abs(float64(a[i] - b[i]))
				worst = math.Max(worst, d)
				if !(d <= 1e-3) {
					t.Errorf("step %d: cpu loss %.6f, vulkan %.6f", i+1, a[i], b[i])
				}
			}
			coop, err := vkb.CoopMatMul()
			if prec != "fp16" || err != nil {
				coop = "no cooperative matrices"
			}
			t.Logf("20 steps on %s (%s): max |loss diff| %.3g (cpu %.4f -> %.4f)", vkb.Name(), coop, worst, a[0], a[len(a)-1])
		})
	}
}

// trainLosses trains a GPT-2 of testCfg from params on be for cfg.Steps steps.
func trainLosses(t *testing.T, be tensor.Backend, params []float32, cfg Config) []float32 {
	t.Helper()
	m, err := gpt2.New(be, testCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetParams(params); err != nil {
		t.Fatal(err)
	}
	tr, err := New(nn.GPT2(m), cfg, corpus(6000), "test corpus")
	if err != nil {
		t.Fatal(err)
	}
	return trainSteps(t, tr, cfg.Steps)
}

// TestVulkanStepSteadyState: after a warm-up step, a training step on Vulkan submits to the
// queue once and allocates neither device memory nor Go heap.
func TestVulkanStepSteadyState(t *testing.T) {
	vkb := testutil.Vulkan(t)
	m, err := gpt2.New(vkb, testCfg)
	if err != nil {
		t.Fatal(err)
	}
	m.InitRandom(2)
	cfg := testConfig()
	cfg.Steps = 1 << 20
	tr, err := New(nn.GPT2(m), cfg, corpus(6000), "test corpus")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainStep(); err != nil {
		t.Fatal(err)
	}
	dev := vkb.Device()
	mem0, rec0 := dev.MemoryStats(), dev.RecordStats()
	const steps = 3
	for i := 0; i < steps; i++ {
		if _, err := tr.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	mem1, rec1 := dev.MemoryStats(), dev.RecordStats()
	if got := rec1.Submits - rec0.Submits; got != steps {
		t.Errorf("%d queue submissions for %d steps, want one per step", got, steps)
	}
	if mem1 != mem0 {
		t.Errorf("device memory changed across steps: %+v -> %+v", mem0, mem1)
	}
	t.Logf("per step: %d dispatches, %d barriers", (rec1.Dispatches-rec0.Dispatches)/steps, (rec1.Barriers-rec0.Barriers)/steps)

	if raceDetector() {
		return // sync.Pool, which purego's calls use, drops items under the race detector
	}
	var stepErr error
	n := allocs.PerRun(3, func() {
		if _, err := tr.TrainStep(); err != nil && stepErr == nil {
			stepErr = err
		}
	})
	if stepErr != nil {
		t.Fatal(stepErr)
	}
	if n != 0 {
		t.Errorf("%v Go heap allocations per training step on Vulkan, want 0", n)
	}
}

// raceDetector reports whether the test binary was built with -race.
func raceDetector() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
