package llama

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHFFixtures reads each fixture model directory and checks a float64 forward of what was
// read against the reference logits and loss.
func TestHFFixtures(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			w, err := LoadWeights(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			e, sf := readExpected(t, dir)
			want, err := sf.Float32("logits_f64")
			if err != nil {
				t.Fatal(err)
			}
			ref := reference{cfg, w}
			V := cfg.Vocab
			var maxErr, loss float64
			for b := range e.B {
				logits := ref.logits(e.InputIDs[b])
				for i, v := range logits {
					maxErr = max(maxErr, math.Abs(v-float64(want[b*e.T*V+i])))
				}
				for t := range e.T {
					row := logits[t*V : (t+1)*V]
					mx := math.Inf(-1)
					for _, v := range row {
						mx = max(mx, v)
					}
					var z float64
					for _, v := range row {
						z += math.Exp(v - mx)
					}
					loss += mx + math.Log(z) - row[e.Targets[b][t]]
				}
			}
			loss /= float64(e.B * e.T)
			if maxErr > 1e-4 {
				t.Errorf("logits differ from the reference by %.3g (tolerance 1e-4)", maxErr)
			}
			if math.Abs(loss-e.LossF64) > 1e-5 {
				t.Errorf("loss %.8f, reference %.8f", loss, e.LossF64)
			}
		})
	}
}

func TestReadConfigFamilies(t *testing.T) {
	q3, err := ReadConfig("testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if !q3.QKNorm || !q3.TieEmbeddings || q3.AttentionBias || q3.RopeTheta != 1e6 || q3.HeadDim != 16 || q3.KVHeads != 2 {
		t.Errorf("qwen3: %+v", q3)
	}
	q2, err := ReadConfig("testdata/qwen2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	// No head_dim key: hidden / heads; no attention_bias key: Qwen2 has q/k/v biases; a
	// sliding_window with use_sliding_window false is full attention.
	if q2.HeadDim != 16 || !q2.AttentionBias || q2.QKNorm || q2.TieEmbeddings {
		t.Errorf("qwen2: %+v", q2)
	}
	l3, err := ReadConfig("testdata/llama3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	if l3.RopeScaling == nil || l3.RopeScaling.Type != "llama3" || l3.TorchDType != "bfloat16" || len(l3.EOS) != 1 || l3.EOS[0] != 2 {
		t.Errorf("llama3: %+v", l3)
	}
}

// TestLlama3RopeScaling checks the fixtures README's worked case: rope_theta 100, D = 8,
// L = 32, factor 8: wavelengths 6.28 kept, 19.87 blended (s = 0.204), 62.8 and 198.7 / 8.
func TestLlama3RopeScaling(t *testing.T) {
	c := Config{HeadDim: 8, RopeTheta: 100, RopeScaling: &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 32}}
	got := c.InvFreq()
	base := []float64{1, math.Pow(100, -0.25), math.Pow(100, -0.5), math.Pow(100, -0.75)}
	s := (32/(2*math.Pi/base[1]) - 1) / 3
	if math.Abs(s-0.204) > 0.001 {
		t.Fatalf("blend factor %v, README says 0.204", s)
	}
	want := []float64{base[0], (1-s)*base[1]/8 + s*base[1], base[2] / 8, base[3] / 8}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("inv_freq[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	lin := Config{HeadDim: 4, RopeTheta: 10000, RopeScaling: &RopeScaling{Type: "linear", Factor: 2}}.InvFreq()
	if lin[0] != 0.5 || lin[1] != 0.01/2 {
		t.Errorf("linear scaling: %v", lin)
	}
}

func TestRefusedConfigs(t *testing.T) {
	base, err := os.ReadFile("testdata/qwen2-tiny/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for edit, want := range map[[2]string]string{
		{`"model_type": "qwen2"`, `"model_type": "mistral"`}:                                                   `model_type "mistral" is not supported`,
		{`"use_sliding_window": false`, `"use_sliding_window": true`}:                                          "sliding-window attention is not supported",
		{`"rope_theta": 10000.0`, `"rope_theta": 10000.0, "num_experts": 8`}:                                   "mixture-of-experts",
		{`"rope_theta": 10000.0`, `"rope_theta": 10000.0, "rope_scaling": {"rope_type": "yarn", "factor": 4}`}: `rope_scaling of type "yarn"`,
		{`"num_key_value_heads": 1`, `"num_key_value_heads": 3`}:                                               "not a multiple of num_key_value_heads 3",
		{`"eos_token_id": 2`, `"eos_token_id": [2, 999]`}:                                                      "token id 999",
	} {
		cfg := strings.Replace(string(base), edit[0], edit[1], 1)
		if cfg == string(base) {
			t.Fatalf("edit %q did not apply", edit[0])
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("%s: %v, want an error naming config.json and containing %q", edit[1], err, want)
		}
	}
}

func TestLoadWeightsErrorsNameTheTensor(t *testing.T) {
	cfg, err := ReadConfig("testdata/qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TieEmbeddings = false // now lm_head.weight is expected and absent
	if _, err := LoadWeights("testdata/qwen3-tiny", cfg); err == nil || !strings.Contains(err.Error(), "lm_head.weight") {
		t.Errorf("untied config over tied weights: %v", err)
	}
	cfg.TieEmbeddings, cfg.Intermediate = true, 161
	if _, err := LoadWeights("testdata/qwen3-tiny", cfg); err == nil || !strings.Contains(err.Error(), "intermediate_size is 161") {
		t.Errorf("wrong intermediate size: %v", err)
	}
	if _, err := LoadWeights(t.TempDir(), cfg); err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("empty directory: %v", err)
	}
}
