package train

import (
	"math"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// TestVulkanTrainsWithinSmallAllocations caps every Vulkan allocation far below a real
// driver's 2 to 4 GiB (the activations of a real batch are tens of GiB, GPT-2 774M's
// parameters 3 GiB) and trains: with an 8 MiB cap the activations take several allocations,
// with a 64 KiB cap the parameters, gradients and moments do; either way the losses match the
// CPU's and no allocation exceeds the cap.
func TestVulkanTrainsWithinSmallAllocations(t *testing.T) {
	vkb := testutil.Vulkan(t)
	dev := vkb.Device()
	t.Cleanup(func() { dev.LimitAllocations(math.MaxUint64) })
	cfg := gpt2.Config{MaxSeqLen: 128, VocabSize: 53, PaddedVocabSize: 64, NumLayers: 2, NumHeads: 4, Channels: 64}
	init, err := gpt2.New(cpu.New(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	init.InitRandom(3)
	params, _ := init.ParamsToHost()
	for _, c := range []struct {
		limit     uint64
		batch, T  int
		paramsIn1 bool
	}{{8 << 20, 8, 128, true}, {64 << 10, 1, 8, false}} {
		tc := testConfig()
		tc.Batch, tc.Seq, tc.Steps, tc.ValFraction = c.batch, c.T, 5, 0.2
		run := func(be tensor.Backend) ([]float32, int) {
			m, err := gpt2.New(be, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SetParams(params); err != nil {
				t.Fatal(err)
			}
			tr, err := New(nn.GPT2(m), tc, corpus(20000), "test corpus")
			if err != nil {
				t.Fatal(err)
			}
			return trainSteps(t, tr, tc.Steps), len(m.Params.Parts())
		}
		want, _ := run(cpu.New())
		dev.LimitAllocations(c.limit)
		got, parts := run(vkb)
		for i := range want {
			if d := math.Abs(float64(want[i] - got[i])); !(d <= 1e-3) {
				t.Errorf("cap %d KiB, step %d: cpu loss %.6f, vulkan %.6f", c.limit>>10, i+1, want[i], got[i])
			}
		}
		st := dev.MemoryStats()
		if st.Largest == 0 || st.Largest > c.limit {
			t.Errorf("largest allocation %d bytes, cap %d", st.Largest, c.limit)
		}
		if (parts == 1) != c.paramsIn1 {
			t.Errorf("cap %d KiB: the parameters took %d allocations", c.limit>>10, parts)
		}
		t.Logf("cap %d KiB: largest allocation %.1f KiB of %d blocks; parameters in %d allocations", c.limit>>10, float64(st.Largest)/(1<<10), st.Blocks, parts)
	}

	// A single parameter tensor, or a single activation, larger than an allocation is refused
	// with sizes.
	dev.LimitAllocations(32 << 10)
	if _, err := gpt2.New(vkb, cfg); err == nil || !strings.Contains(err.Error(), "qkvw of layer 0 (48.0 KiB) exceeds the device's largest allocation") {
		t.Errorf("a 48 KiB layer weight beyond a 32 KiB cap: %v", err)
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
