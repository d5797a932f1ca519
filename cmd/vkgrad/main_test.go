package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/checkpoint"
	"github.com/vkgrad/vkgrad/nn/data"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
)

func runCLI(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestHelpForEveryCommand(t *testing.T) {
	out, err := runCLI("--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		name := c.name
		if !strings.Contains(out, name) {
			t.Errorf("top-level help does not list %s", name)
		}
		help, err := runCLI(name, "--help")
		if err != nil {
			t.Errorf("%s --help: %v", name, err)
		}
		if !strings.Contains(help, c.summary) || !strings.Contains(help, "Flags:") {
			t.Errorf("%s --help:\n%s", name, help)
		}
	}
	if _, err := runCLI("nonsense"); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("unknown command: %v", err)
	}
	if v, err := runCLI("--version"); err != nil || !strings.HasPrefix(v, "vkgrad ") {
		t.Errorf("--version: %q, %v", v, err)
	}
	seen := map[string]bool{}
	for _, c := range commands {
		if seen[c.name] || c.name == "" || c.summary == "" {
			t.Errorf("command %q listed twice or without a name or summary", c.name)
		}
		seen[c.name] = true
	}
}

func TestVerifyFixture(t *testing.T) {
	dir := filepath.Join(testutil.FixturesDir(t), "llmc")
	out, err := runCLI("verify", "llmc", "--device", "cpu", "-q",
		"--model", filepath.Join(dir, "tiny_ckpt.bin"), "--state", filepath.Join(dir, "tiny_state.bin"),
		"--losses", filepath.Join(dir, "tiny_losses.txt"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "PASS") {
		t.Errorf("no PASS line:\n%s", out)
	}
	// A wrong learning rate makes the step losses diverge: the command must fail.
	out, err = runCLI("verify", "llmc", "--device", "cpu", "-q", "--lr", "0.01",
		"--model", filepath.Join(dir, "tiny_ckpt.bin"), "--state", filepath.Join(dir, "tiny_state.bin"),
		"--losses", filepath.Join(dir, "tiny_losses.txt"))
	if err == nil || !strings.Contains(out, "FAIL") {
		t.Errorf("lr 0.01 against losses made with 1e-3 passed:\n%s", out)
	}
}

// TestBadInput runs the commands on broken files and flags: each must fail with a message that
// names the problem, never panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	fixtures := filepath.Join(testutil.FixturesDir(t), "llmc")
	ckpt, _ := os.ReadFile(filepath.Join(fixtures, "tiny_ckpt.bin"))
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badMagic := append([]byte(nil), ckpt...)
	binary.LittleEndian.PutUint32(badMagic, 12345)
	badVersion := append([]byte(nil), ckpt...)
	binary.LittleEndian.PutUint32(badVersion[4:], 9)
	truncated := write("truncated.bin", ckpt[:len(ckpt)/2])
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)

	// A vkgrad checkpoint whose config does not fit its tensors.
	cfg := gpt2.Config{MaxSeqLen: 8, VocabSize: 30, PaddedVocabSize: 32, NumLayers: 1, NumHeads: 2, Channels: 8}
	mismatched := filepath.Join(dir, "mismatch.safetensors")
	if err := checkpoint.Save(mismatched, &checkpoint.State{Config: cfg, Params: make([]float32, cfg.NumParams())}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(mismatched)
	// The metadata is JSON inside a JSON string, so its quotes are escaped.
	edited := bytes.Replace(raw, []byte(`\"channels\":8`), []byte(`\"channels\":6`), 1)
	if bytes.Equal(edited, raw) {
		t.Fatal("test setup: channels field not found in the checkpoint metadata")
	}
	write("mismatch.safetensors", edited)

	// A token file with an id past the tiny model's vocabulary of 500.
	tokFile := filepath.Join(dir, "tokens.bin")
	toks := make([]int32, 4000)
	for i := range toks {
		toks[i] = int32(i % 400)
	}
	toks[1234] = 600
	if err := data.WriteTokenFile(tokFile, toks); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"wrong magic", []string{"sample", "--model", write("magic.bin", badMagic)}, "magic.bin"},
		{"wrong version", []string{"sample", "--model", write("version.bin", badVersion)}, "version"},
		{"truncated", []string{"sample", "--model", truncated}, "truncated.bin"},
		{"config mismatch", []string{"sample", "--model", mismatched}, "wte"},
		{"empty data folder", []string{"train", "--data", empty, "--run-dir", filepath.Join(dir, "run1")}, "empty"},
		{"token id >= V", []string{"train", "--init", filepath.Join(fixtures, "tiny_ckpt.bin"), "--data", tokFile, "--seq", "32", "--run-dir", filepath.Join(dir, "run2")}, "600"},
		{"seq > maxT", []string{"train", "--init", filepath.Join(fixtures, "tiny_ckpt.bin"), "--data", tokFile, "--seq", "65", "--run-dir", filepath.Join(dir, "run3")}, "65"},
		{"bad device", []string{"train", "--device", "tpu"}, "tpu"},
		{"bad preset", []string{"train", "--preset", "gpt5"}, "gpt5"},
		{"bad temperature", []string{"sample", "--model", filepath.Join(fixtures, "tiny_ckpt.bin"), "--temperature", "-1"}, "temperature"},
		{"verify without files", []string{"verify", "llmc"}, "--model"},
		{"missing file", []string{"eval", "--model", filepath.Join(dir, "nope.bin")}, "nope.bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.name != "bad device" {
				args = append(args, "--device", "cpu", "-q")
			}
			out, err := runCLI(args...)
			if err == nil {
				t.Fatalf("succeeded:\n%s", out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestDevices(t *testing.T) {
	out, err := runCLI("devices")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "threads") || !strings.Contains(out, "--device auto ->") {
		t.Errorf("devices output:\n%s", out)
	}
	if os.Getenv("VKGRAD_REQUIRE_VULKAN") == "1" && !strings.Contains(out, "vulkan:0") {
		t.Errorf("VKGRAD_REQUIRE_VULKAN=1 but no Vulkan device listed:\n%s", out)
	}
}

// TestTrainResumeCLI: `train --steps 6` equals `train --steps 4` then `train --resume --steps 6`,
// bit for bit, through the command line and the run directory.
func TestTrainResumeCLI(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens.bin")
	toks := make([]int32, 20000)
	for i := range toks {
		toks[i] = int32((i*i + 3*i) % 499)
	}
	if err := data.WriteTokenFile(tokFile, toks); err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(testutil.FixturesDir(t), "llmc", "tiny_ckpt.bin")
	common := []string{"--init", init, "--data", tokFile, "--batch", "2", "--seq", "16", "--sample-tokens", "0",
		"--device", "cpu", "-q", "--val-batches", "2", "--warmup", "2"}
	straight := filepath.Join(dir, "straight")
	if out, err := runCLI(append([]string{"train", "--steps", "6", "--run-dir", straight}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	split := filepath.Join(dir, "split")
	if out, err := runCLI(append([]string{"train", "--steps", "6", "--stop-at", "4", "--run-dir", split}, common...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st, err := checkpoint.Load(filepath.Join(split, "checkpoint.safetensors")); err != nil || st.Step != 4 {
		t.Fatalf("after --stop-at 4: %v, step %v", err, st)
	}
	out, err := runCLI("train", "--resume", split, "--sample-tokens", "0", "--device", "cpu", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	a, err := checkpoint.Load(filepath.Join(split, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := checkpoint.Load(filepath.Join(straight, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Step != 6 || b.Step != 6 {
		t.Fatalf("steps %d and %d, want 6", a.Step, b.Step)
	}
	for i := range a.Params {
		if a.Params[i] != b.Params[i] || a.AdamM[i] != b.AdamM[i] || a.AdamV[i] != b.AdamV[i] {
			t.Fatalf("parameter %d differs between the resumed and the straight run", i)
		}
	}
}

// TestBenchJSON runs the training benchmark on a tiny model and checks the JSON report's
// arithmetic: tokens/s and GFLOP/s follow from the measured step time and the model FLOPs.
func TestBenchJSON(t *testing.T) {
	out, err := runCLI("bench", "train", "--preset", "tiny", "--batch", "2", "--seq", "16", "--steps", "2", "--json", "--device", "cpu", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r map[string]float64
	line := out[strings.Index(out, "{"):]
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &r); err != nil {
		// Strings (device, preset) do not fit float64; decode loosely.
		var loose map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &loose); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		r = map[string]float64{}
		for k, v := range loose {
			if f, ok := v.(float64); ok {
				r[k] = f
			}
		}
	}
	ms, tps := r["ms_per_step"], r["tokens_per_s"]
	if ms <= 0 || math.Abs(tps-32/(ms/1e3)) > 1e-6*tps {
		t.Errorf("tokens_per_s %v inconsistent with ms_per_step %v", tps, ms)
	}
	if r["peak_gflops"] <= 0 || math.Abs(r["peak_fraction"]-r["achieved_gflops"]/r["peak_gflops"]) > 1e-9 {
		t.Errorf("peak fraction %v != %v / %v", r["peak_fraction"], r["achieved_gflops"], r["peak_gflops"])
	}
	if r["peak_rss_bytes"] <= 0 {
		t.Error("no peak RSS")
	}
}

// The Llama-family presets benchmark too: a training step's FLOPs follow the config's count,
// LoRA reports the adapters it trains, and sampling reports a row per batch size.
func TestBenchLlamaPreset(t *testing.T) {
	report := func(args ...string) map[string]any {
		t.Helper()
		out, err := runCLI(append([]string{"bench"}, append(args, "--json", "--device", "cpu", "-q")...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(out[strings.Index(out, "{"):])), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return r
	}
	cfg, _ := llama.Preset("qwen3-tiny")
	r := report("train", "--preset", "qwen3-tiny", "--batch", "1", "--seq", "8", "--steps", "1", "--warmup", "0")
	if got, want := r["model_gflop_per_step"].(float64), cfg.TrainFLOPsPerToken(8)*8/1e9; math.Abs(got-want) > 1e-9*want || r["trained_params"].(float64) != float64(cfg.NumParams()) {
		t.Errorf("full fine-tuning: %v GFLOP per step (want %v), %v trained", got, want, r["trained_params"])
	}
	r = report("train", "--preset", "qwen3-tiny", "--lora-rank", "4", "--batch", "1", "--seq", "8", "--steps", "1", "--warmup", "0")
	if n := r["trained_params"].(float64); n <= 0 || n >= float64(cfg.NumParams())/10 {
		t.Errorf("LoRA rank 4 trains %v of %d parameters", n, cfg.NumParams())
	}
	r = report("sample", "--preset", "qwen3-tiny", "--batches", "1,2", "--tokens", "4", "--steps", "1")
	if rows, _ := r["rows"].([]any); len(rows) != 2 {
		t.Errorf("sample rows %v", r["rows"])
	}
	if _, err := runCLI("bench", "train", "--preset", "tiny", "--lora-rank", "4", "--device", "cpu", "-q"); err == nil {
		t.Error("--lora-rank on a GPT-2 preset was accepted")
	}
}

// On Vulkan, bench train reports what a step records (dispatches, barriers and submissions)
// and reads the step's GFLOP/s against the device's multiply-add probe.
func TestBenchVulkanCounts(t *testing.T) {
	testutil.Vulkan(t)
	out, err := runCLI("bench", "train", "--preset", "tiny", "--batch", "2", "--seq", "16", "--steps", "2", "--json", "--device", "vulkan:0", "-q")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out[strings.Index(out, "{"):])), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	d, _ := r["dispatches_per_step"].(float64)
	b, _ := r["barriers_per_step"].(float64)
	s, _ := r["submits_per_step"].(float64)
	if d < 20 || b < 1 || b > d || s < 1 {
		t.Errorf("a training step of %v dispatches, %v barriers, %v submissions", d, b, s)
	}
	p, _ := r["peak_gflops"].(float64)
	f, _ := r["peak_fraction"].(float64)
	if achieved, _ := r["achieved_gflops"].(float64); !(p > 0 && f > 0 && math.Abs(f*p-achieved) < 1e-6*achieved) || r["peak_threads"] != nil {
		t.Errorf("peak %v GFLOP/s (threads %v), fraction %v of it for %v achieved", p, r["peak_threads"], f, r["achieved_gflops"])
	}
}
