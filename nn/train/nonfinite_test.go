package train

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// poisonPadding puts +Inf in a padded row of wte: the loss stays finite (padded columns are not
// in the softmax), the gradients do not (0 · Inf in the backward of the head).
func poisonPadding(t *testing.T, tr *Trainer) {
	t.Helper()
	p, err := tr.Model.StateParams()
	if err != nil {
		t.Fatal(err)
	}
	p[(testCfg.PaddedVocabSize-1)*testCfg.Channels] = float32(math.Inf(1))
	if err := tr.Model.SetStateParams(p); err != nil {
		t.Fatal(err)
	}
}

func hostCopy(t *testing.T, x interface{ ToHost() ([]float32, error) }) []float32 {
	t.Helper()
	v, err := x.ToHost()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestFaultNonFiniteGradientsSkipped(t *testing.T) {
	tr := newTrainer(t, testConfig())
	trainSteps(t, tr, 2)
	poisonPadding(t, tr)
	params, m, v, step, adamStep := hostCopy(t, tr.Model.Params()), hostCopy(t, tr.Opt.M), hostCopy(t, tr.Opt.V), tr.Step, tr.Opt.Step
	for i := range DefaultMaxSkips {
		s, err := tr.TrainStep()
		if err != nil {
			t.Fatalf("skip %d: %v", i+1, err)
		}
		if !s.Skipped || !finite(s.Loss) || finite(s.GradNorm) || !strings.Contains(s.Reason, "wte") {
			t.Fatalf("skip %d: %+v, want a skipped step with a finite loss, a NaN norm and wte named", i+1, s)
		}
	}
	if !sameBits(params, hostCopy(t, tr.Model.Params())) || !sameBits(m, hostCopy(t, tr.Opt.M)) || !sameBits(v, hostCopy(t, tr.Opt.V)) ||
		tr.Step != step || tr.Opt.Step != adamStep || tr.Skipped != DefaultMaxSkips {
		t.Fatal("a skipped step changed the parameters, the moments or the step count")
	}
	_, err := tr.TrainStep()
	if err == nil || !strings.Contains(err.Error(), "step 3:") || !strings.Contains(err.Error(), "3 steps in a row") || !strings.Contains(err.Error(), "wte[") {
		t.Fatalf("the fourth non-finite step in a row: %v", err)
	}
}

func TestFaultNonFiniteStopsAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.OnNonFinite = "stop"
	tr := newTrainer(t, cfg)
	poisonPadding(t, tr)
	before := hostCopy(t, tr.Model.Params())
	_, err := tr.TrainStep()
	if err == nil || !strings.Contains(err.Error(), "step 1:") || !strings.Contains(err.Error(), "--on-nonfinite stop") {
		t.Fatalf("stop policy: %v", err)
	}
	if !sameBits(before, hostCopy(t, tr.Model.Params())) {
		t.Fatal("the failed step changed the parameters")
	}
	bad := testConfig()
	bad.OnNonFinite = "ignore"
	if err := bad.Validate(); err == nil {
		t.Error("on-nonfinite ignore should be refused")
	}
}

// TestFaultNaNParametersNeverSaved: a checkpoint of non-finite parameters is refused and the
// good one on disk stays as it was, byte for byte.
func TestFaultNaNParametersNeverSaved(t *testing.T) {
	tr := newTrainer(t, testConfig())
	trainSteps(t, tr, 1)
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := tr.Save(path); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	p := hostCopy(t, tr.Model.Params())
	p[len(p)-1] = float32(math.NaN())
	if err := tr.Model.SetStateParams(p); err != nil {
		t.Fatal(err)
	}
	err := tr.Save(path)
	if err == nil || !strings.Contains(err.Error(), "lnfb[") || !strings.Contains(err.Error(), "last checkpoint is kept") {
		t.Fatalf("saving NaN parameters: %v", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, good) {
		t.Fatal("the good checkpoint was changed")
	}
}
