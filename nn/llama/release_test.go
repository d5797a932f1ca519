package llama

import (
	"math"
	"testing"

	"github.com/vkgrad/vkgrad/autograd"
	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// loadTrainable loads the tiny Qwen3 onto be with its gradients, or with adapters when lo is
// set.
func loadTrainable(t *testing.T, be tensor.Backend, lo *LoRAConfig) *Model {
	t.Helper()
	return loadModel(t, be, "qwen3-tiny", lo)
}

// batchTokens are B rows of T token ids, the same for every call of one shape.
func batchTokens(m *Model, B, T int) []int32 {
	ids := make([]int32, B*T)
	for i := range ids {
		ids[i] = int32((i*37 + 11) % m.Config.Vocab)
	}
	return ids
}

// trainPass runs a recorded ForwardLoss and Backward on a (B, T) batch and returns the loss
// and the gradients of what trains.
func trainPass(t *testing.T, m *Model, B, T int) (float32, []float32) {
	t.Helper()
	m.ZeroTrainableGrads()
	in := batchTokens(m, B, T)
	targets := append(in[1:len(in):len(in)], in[0])
	tp := autograd.NewTape()
	loss, err := m.ForwardLoss(tp, in, targets, B, T)
	if err == nil {
		err = m.Backward(tp)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, g := m.Trainable()
	grads, err := g.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return loss, grads
}

// hiddenPass runs ForwardTrunk without a tape and returns the final hidden states.
func hiddenPass(t *testing.T, m *Model, B, T int) []float32 {
	t.Helper()
	if err := m.ForwardTrunk(nil, batchTokens(m, B, T), B, T); err != nil {
		t.Fatal(err)
	}
	h := make([]float32, B*T*m.Config.Hidden)
	if err := m.Backend.Download(h, m.Hidden().Value); err != nil {
		t.Fatal(err)
	}
	return h
}

// firstDiff is the first index where a and b differ in their bits, -1 when none does.
func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// Activations reserved for a larger batch, then released and laid out again, give the bits of
// activations laid out for each batch itself; the reserve allocates what TrunkActivationBytes
// says, the passes within it allocate nothing more than the lm head's chunks, and the release
// gives all of it back but the rotary table.
func TestReserveAndReleaseKeepTheBits(t *testing.T) {
	for _, lo := range []*LoRAConfig{nil, {Rank: 4, Alpha: 8, Dropout: 0.1}} {
		name := map[bool]string{true: "lora", false: "full"}[lo != nil]
		fresh := loadTrainable(t, &countingBackend{Backend: cpu.New()}, lo)
		be := &countingBackend{Backend: cpu.New()}
		m := loadTrainable(t, be, lo)
		const rB, rT = 3, 9
		state := be.live
		if err := m.ReserveActivations(rB, rT, true); err != nil {
			t.Fatal(err)
		}
		want, err := TrunkActivationBytes(be, m.Config, rB, rT, true, lo)
		if err != nil {
			t.Fatal(err)
		}
		if got := be.live - state; got != want {
			t.Fatalf("%s: reserving B=%d T=%d allocated %d bytes, TrunkActivationBytes %d", name, rB, rT, got, want)
		}
		reserved := be.live
		if a, b := hiddenPass(t, fresh, 1, 5), hiddenPass(t, m, 1, 5); firstDiff(a, b) >= 0 || be.live != reserved {
			t.Errorf("%s: hidden states of B=1 T=5 in reserved activations differ at %d; %d bytes allocated", name, firstDiff(a, b), be.live-reserved)
		}
		for _, s := range [][2]int{{2, 7}, {rB, rT}, {1, 4}} {
			lf, gf := trainPass(t, fresh, s[0], s[1])
			lm, gm := trainPass(t, m, s[0], s[1])
			if math.Float32bits(lf) != math.Float32bits(lm) || firstDiff(gf, gm) >= 0 {
				t.Errorf("%s: B=%d T=%d: loss %v, reserved %v; gradients differ at %d", name, s[0], s[1], lf, lm, firstDiff(gf, gm))
			}
			if head := 2 * 4 * int64(m.headChunkRows(s[0]*s[1])*m.Config.Vocab); be.live-reserved != head {
				t.Errorf("%s: B=%d T=%d allocated %d bytes besides the reserve, its lm head chunks %d", name, s[0], s[1], be.live-reserved, head)
			}
		}
		m.ReleaseActivations()
		if rope := 4 * int64(rT*m.Config.HeadDim); be.live != state+rope {
			t.Errorf("%s: %d bytes held after the release, want %d (the state and the rotary table)", name, be.live, state+rope)
		}
		lf, gf := trainPass(t, fresh, 2, 7)
		lm, gm := trainPass(t, m, 2, 7)
		if math.Float32bits(lf) != math.Float32bits(lm) || firstDiff(gf, gm) >= 0 {
			t.Errorf("%s: after the release: loss %v, want %v; gradients differ at %d", name, lm, lf, firstDiff(gf, gm))
		}
	}
}

// On Vulkan too, passes in reserved activations give the bits of passes in their own.
func TestReservedActivationsOnVulkan(t *testing.T) {
	be := testutil.Vulkan(t)
	fresh, m := loadTrainable(t, be, nil), loadTrainable(t, be, nil)
	if err := m.ReserveActivations(3, 9, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range [][2]int{{2, 7}, {1, 4}} {
		lf, gf := trainPass(t, fresh, s[0], s[1])
		lm, gm := trainPass(t, m, s[0], s[1])
		if math.Float32bits(lf) != math.Float32bits(lm) || firstDiff(gf, gm) >= 0 {
			t.Errorf("B=%d T=%d: loss %v, reserved %v; gradients differ at %d", s[0], s[1], lf, lm, firstDiff(gf, gm))
		}
	}
}

// A pass larger than the reserve lays out its own activations, in place of the reserve's.
func TestPassBeyondTheReserveLaysOutAgain(t *testing.T) {
	fresh := loadTrainable(t, &countingBackend{Backend: cpu.New()}, nil)
	be := &countingBackend{Backend: cpu.New()}
	m := loadTrainable(t, be, nil)
	state := be.live
	if err := m.ReserveActivations(2, 5, true); err != nil {
		t.Fatal(err)
	}
	lf, gf := trainPass(t, fresh, 2, 8)
	lm, gm := trainPass(t, m, 2, 8)
	if math.Float32bits(lf) != math.Float32bits(lm) || firstDiff(gf, gm) >= 0 {
		t.Errorf("loss %v, want %v; gradients differ at %d", lm, lf, firstDiff(gf, gm))
	}
	acts, err := TrunkActivationBytes(be, m.Config, 2, 8, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	head := 2 * 4 * int64(m.headChunkRows(16)*m.Config.Vocab)
	if got, want := be.live-state, acts+head; got != want {
		t.Errorf("%d bytes held besides the state, want %d (B=2 T=8's activations and head chunks)", got, want)
	}
}

// A reference sharing the policy's activations takes them for its pass, allocating nothing
// while they are large enough, and leaves the policy's results as they were.
func TestShareActivations(t *testing.T) {
	be := &countingBackend{Backend: cpu.New()}
	policy := loadTrainable(t, be, nil)
	ref, err := Load(be, "testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	want := hiddenPass(t, policy, 2, 6)
	if err := ref.ShareActivations(policy); err != nil {
		t.Fatal(err)
	}
	if err := policy.ReserveActivations(2, 6, true); err != nil {
		t.Fatal(err)
	}
	held := be.live
	if got := hiddenPass(t, ref, 2, 6); firstDiff(got, want) >= 0 {
		t.Errorf("the reference's hidden states differ from the policy's at %d", firstDiff(got, want))
	}
	if got := hiddenPass(t, policy, 2, 6); firstDiff(got, want) >= 0 {
		t.Errorf("the policy's hidden states after the reference's pass differ at %d", firstDiff(got, want))
	}
	if extra := be.live - held; extra != 4*int64(6*ref.Config.HeadDim) { // the reference's rotary table
		t.Errorf("the shared passes allocated %d bytes", extra)
	}
	ref.ReleaseActivations()
	if policy.acts != nil || ref.acts != nil {
		t.Error("releasing the reference kept the policy's activations")
	}
	if err := policy.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 4}, 1); err == nil {
		t.Error("adapters on a model that shares its activations: no error")
	}
	if err := ref.ShareActivations(ref); err == nil {
		t.Error("a model sharing with itself: no error")
	}
	other, err := Load(be, "testdata/qwen2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.ShareActivations(policy); err == nil {
		t.Error("sharing between two configs: no error")
	}
	adapted := loadTrainable(t, be, &LoRAConfig{Rank: 2, Alpha: 4})
	if err := adapted.ShareActivations(ref); err == nil {
		t.Error("sharing with a LoRA model: no error")
	}
}

// Reserving room for gradients needs them.
func TestReserveActivationsNeedsGrads(t *testing.T) {
	m, err := Load(cpu.New(), "testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ReserveActivations(1, 4, true); err == nil {
		t.Error("reserving gradients without EnableGrads: no error")
	}
	if err := m.ReserveActivations(1, 4, false); err != nil {
		t.Errorf("reserving a forward pass's activations: %v", err)
	}
}

// A recording SelectedHead allocates what SelectedHeadBytes says, in chunks of its own budget:
// at a 152k vocabulary they are a quarter of the training head's.
func TestSelectedHeadBytesMatchesAllocations(t *testing.T) {
	be := &countingBackend{Backend: cpu.New()}
	m := loadTrainable(t, be, nil)
	const B, T = 2, 6
	tp := autograd.NewTape()
	if err := m.ForwardTrunk(tp, batchTokens(m, B, T), B, T); err != nil {
		t.Fatal(err)
	}
	positions := []int{1, 2, 3, 7, 8, 11}
	targets := batchTokens(m, 1, len(positions))
	cutoffs := make([]float32, len(positions))
	for i := range cutoffs {
		cutoffs[i] = float32(math.Inf(-1)) // no cutoff: every token kept
	}
	before := be.live
	if _, _, err := m.NewSelectedHead().Forward(tp, positions, targets, cutoffs, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := be.live-before, m.SelectedHeadBytes(len(positions), true); got != want {
		t.Errorf("a selected head of %d positions allocated %d bytes, SelectedHeadBytes says %d", len(positions), got, want)
	}
	wide := &Model{Config: Config{Vocab: 151936}}
	if got, want := wide.selectedChunkRows(4096), (16<<20)/151936; got != want || got >= wide.headChunkRows(4096) {
		t.Errorf("a selected head's chunk at a 152k vocabulary: %d rows, want %d (the training head's: %d)", got, want, wide.headChunkRows(4096))
	}
}
