package llama

import (
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// passResults are a model's loss and gradients after a ForwardLoss and Backward, then its
// gradients after a ForwardTrunk and a SelectedHead's backward, on two batch shapes.
func passResults(t *testing.T, m *Model) []float32 {
	t.Helper()
	var out []float32
	for _, s := range [][2]int{{2, 7}, {3, 5}} {
		B, T := s[0], s[1]
		loss, grads := trainPass(t, m, B, T)
		out = append(append(out, loss), grads...)
		m.ZeroTrainableGrads()
		tp := autograd.NewTape()
		if err := m.ForwardTrunk(tp, batchTokens(m, B, T), B, T); err != nil {
			t.Fatal(err)
		}
		m.ZeroTrunkGrads()
		logp, _, err := m.NewSelectedHead().Forward(tp, []int{1, 3, B*T - 1}, []int32{5, 6, 7}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		m.Backend.Fill(logp.Grad, 1)
		tp.Backward()
		_, g := m.Trainable()
		h, err := g.ToHost()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h...)
	}
	return out
}

// Layers taking turns with one set of inner activation gradients give the bits of layers with
// their own, for every architecture and with LoRA adapters (dropping their inputs), on the CPU
// and on Vulkan.
func TestSharedLayerGradsKeepTheBits(t *testing.T) {
	defer func() { shareLayerGrads = true }()
	for _, dir := range []string{"qwen3-tiny", "qwen2-tiny", "llama3-tiny"} {
		for _, lo := range []*LoRAConfig{nil, {Rank: 4, Alpha: 8, Dropout: 0.1}} {
			var results [2][]float32
			for i, share := range []bool{false, true} {
				shareLayerGrads = share
				results[i] = passResults(t, loadModel(t, cpu.New(), dir, lo))
			}
			if k := firstDiff(results[0], results[1]); k >= 0 {
				t.Errorf("%s, LoRA %v: result %d is %v with shared gradients, %v without", dir, lo != nil, k, results[1][k], results[0][k])
			}
		}
	}
	be := testutil.Vulkan(t)
	var results [2][]float32
	for i, share := range []bool{false, true} {
		shareLayerGrads = share
		results[i] = passResults(t, loadModel(t, be, "qwen3-tiny", &LoRAConfig{Rank: 4, Alpha: 8, Dropout: 0.1}))
	}
	if k := firstDiff(results[0], results[1]); k >= 0 {
		t.Errorf("Vulkan: result %d is %v with shared gradients, %v without", k, results[1][k], results[0][k])
	}
}

// loadModel loads testdata/dir onto be with its gradients, or with adapters when lo is set.
func loadModel(t *testing.T, be tensor.Backend, dir string, lo *LoRAConfig) *Model {
	t.Helper()
	m, err := Load(be, "testdata/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if lo != nil {
		err = m.EnableLoRA(*lo, 1)
	} else {
		err = m.EnableGrads()
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Sharing saves every layer but one its inner gradients: for a Qwen3 (q/k norms), per row
// 7 of width H*D (q, qn, qr, attention output, and qkv's 3), 4 of KV*D (k, v, kn, kr), 4 of C
// (o, x2, h2, down) and 3 of I (gate, up, act).
func TestSharedLayerGradsSave(t *testing.T) {
	defer func() { shareLayerGrads = true }()
	c, err := ReadConfig("testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	const B, T = 3, 9
	bytes := func(share bool) int64 {
		shareLayerGrads = share
		n, err := TrunkActivationBytes(cpu.New(), c, B, T, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	perRow := 7*c.Heads*c.HeadDim + 4*c.KVHeads*c.HeadDim + 4*c.Hidden + 3*c.Intermediate
	want := int64(c.Layers-1) * 4 * int64(B*T*perRow)
	own, shared := bytes(false), bytes(true)
	if own-shared != want {
		t.Errorf("sharing saves %d bytes (%d -> %d), want %d", own-shared, own, shared, want)
	}
}
