package train

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestVulkanTrainsWithinSmallAllocations caps every Vulkan allocation at 8 MiB (drivers cap
// one allocation at 2 to 4 GiB; the activations of a real batch are tens of GiB) and trains a
// model whose activations take several such allocations: the losses match the CPU's, and no
// allocation exceeded the cap.
func TestVulkanTrainsWithinSmallAllocations(t *testing.T) {
	vkb := testutil.Vulkan(t)
	dev := vkb.Device()
	const limit = 8 << 20
	dev.LimitAllocations(limit)
	t.Cleanup(func() { dev.LimitAllocations(math.MaxUint64) })
	cfg := gpt2.Config{MaxSeqLen: 128, VocabSize: 53, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 4, Channels: 64}
	tc := testConfig()
	tc.Batch, tc.Seq, tc.Steps, tc.ValFraction = 8, 128, 5, 0.2
	run := func(be tensor.Backend, params []float32) []float32 {
		m, err := gpt2.New(be, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetParams(params); err != nil {
			t.Fatal(err)
		}
		tr, err := New(m, tc, corpus(20000), "test corpus")
		if err != nil {
			t.Fatal(err)
		}
		return trainSteps(t, tr, tc.Steps)
	}
	init, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	init.InitRandom(3)
	params, _ := init.ParamsToHost()
	want, got := run(cpu.New(), params), run(vkb, params)
	for i := range want {
		if d := math.Abs(float64(want[i] - got[i])); !(d <= 1e-3) {
			t.Errorf("step %d: cpu loss %.6f, vulkan %.6f", i+1, want[i], got[i])
		}
	}
	st := dev.MemoryStats()
	if st.Largest == 0 || st.Largest > limit {
		t.Errorf("largest allocation %d bytes, cap %d", st.Largest, limit)
	}
	t.Logf("largest allocation %.1f MiB of %d blocks under an 8 MiB cap", float64(st.Largest)/(1<<20), st.Blocks)

	// Parameters, or a single activation, larger than an allocation are refused with sizes.
	dev.LimitAllocations(256 << 10)
	if _, err := gpt2.New(vkb, cfg); err == nil || !strings.Contains(err.Error(), "exceeds the largest allocation") {
		t.Errorf("parameters of 439 KiB beyond a 256 KiB cap: %v", err)
	}
	dev.LimitAllocations(512 << 10)
	m, err := gpt2.New(vkb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.ForwardLoss(nil, make([]int32, 8*128), make([]int32, 8*128), 8, 128)
	if err == nil || !strings.Contains(err.Error(), "exceeds the device's largest allocation") {
		t.Errorf("an activation of 1 MiB beyond a 512 KiB cap: %v", err)
	}
}
