package verify

import (
	"path/filepath"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/tensor"
	"github.com/vkgrad/vkgrad/tensor/cpu"
)

// checkFixture runs the llm.c parity check on the shared fixture on one backend.
func checkFixture(t *testing.T, be tensor.Backend) {
	t.Helper()
	dir := filepath.Join(testutil.FixturesDir(t), "llmc")
	r, err := LLMC(be, Options{
		ModelPath:  filepath.Join(dir, "tiny_ckpt.bin"),
		StatePath:  filepath.Join(dir, "tiny_state.bin"),
		LossesPath: filepath.Join(dir, "tiny_losses.txt"),
		LR:         1e-3,
	})
	if err != nil {
		t.Fatal(err)
	}
	g, name := r.GradMaxNormalisedDiff()
	t.Logf("%s: logits %.3g, loss %.3g, worst grad %s %.3g, steps %.3g", be.Name(), r.LogitsMaxDiff, float64(r.Loss-r.RefLoss), name, g, r.StepMaxDiff)
	for _, f := range r.Failures {
		t.Error(f)
	}
	if len(r.StepLosses) != 10 {
		t.Errorf("ran %d steps, want 10", len(r.StepLosses))
	}
}

func TestLLMCFixtureCPU(t *testing.T) { checkFixture(t, cpu.New()) }

func TestLLMCFixtureVulkan(t *testing.T) { checkFixture(t, testutil.Vulkan(t)) }
