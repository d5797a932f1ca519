package checkpoint

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/llama"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

var cfg = gpt2.Config{MaxSeqLen: 8, VocabSize: 50, PaddedVocabSize: 128, NumLayers: 2, NumHeads: 2, Channels: 8}

func randomState(seed uint64, adam bool) *State {
	rng := rand.New(rand.NewPCG(seed, 11))
	vec := func() []float32 {
		v := make([]float32, cfg.NumParams())
		for i := range v {
			v[i] = math.Float32frombits(rng.Uint32()) // every bit pattern: NaN payloads, -0, Inf, subnormals
		}
		return v
	}
	st := &State{
		Config: cfg, Step: 1234, Params: vec(),
		Optimizer: Optimizer{Name: "adamw", LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Extra: map[string]float64{"grad_clip": 1, "warmup": 1 / 3.0}},
		RNG:       []uint64{math.MaxUint64, 0, 1 << 63, rng.Uint64()},
		Meta:      map[string]string{"data_pos": "12345", "run": `{"lr":3e-4}`},
	}
	if adam {
		st.AdamM, st.AdamV = vec(), vec()
		st.Extra = map[string][]float32{"value_head": vec()[:9], "value_head.adam_m": {1, -2}, "empty": {}}
	}
	return st
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %#08x, want %#08x", what, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

func checkSame(t *testing.T, got, want *State) {
	t.Helper()
	if got.Config != want.Config || got.Step != want.Step {
		t.Fatalf("config %v step %d, want %v step %d", got.Config, got.Step, want.Config, want.Step)
	}
	sameBits(t, "Params", got.Params, want.Params)
	sameBits(t, "AdamM", got.AdamM, want.AdamM)
	sameBits(t, "AdamV", got.AdamV, want.AdamV)
	if (got.AdamM == nil) != (want.AdamM == nil) {
		t.Fatalf("AdamM nil = %v, want %v", got.AdamM == nil, want.AdamM == nil)
	}
	o, w := got.Optimizer, want.Optimizer
	if o.Name != w.Name || o.LR != w.LR || o.Beta1 != w.Beta1 || o.Beta2 != w.Beta2 || o.Eps != w.Eps || o.WeightDecay != w.WeightDecay || len(o.Extra) != len(w.Extra) {
		t.Fatalf("optimizer %+v, want %+v", o, w)
	}
	for k, v := range w.Extra {
		if o.Extra[k] != v {
			t.Fatalf("optimizer extra %s = %v, want %v", k, o.Extra[k], v)
		}
	}
	if len(got.RNG) != len(want.RNG) {
		t.Fatalf("RNG %v, want %v", got.RNG, want.RNG)
	}
	for i := range want.RNG {
		if got.RNG[i] != want.RNG[i] {
			t.Fatalf("RNG[%d] = %d, want %d", i, got.RNG[i], want.RNG[i])
		}
	}
	if len(got.Extra) != len(want.Extra) {
		t.Fatalf("Extra has %d buffers, want %d", len(got.Extra), len(want.Extra))
	}
	for k, v := range want.Extra {
		sameBits(t, "Extra["+k+"]", got.Extra[k], v)
	}
	if len(got.Meta) != len(want.Meta) {
		t.Fatalf("Meta %v, want %v", got.Meta, want.Meta)
	}
	for k, v := range want.Meta {
		if got.Meta[k] != v {
			t.Fatalf("Meta[%s] = %q, want %q", k, got.Meta[k], v)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, adam := range []bool{true, false} {
		st := randomState(1, adam)
		p := filepath.Join(t.TempDir(), "ckpt.safetensors")
		if err := Save(p, st); err != nil {
			t.Fatal(err)
		}
		got, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, st)
		peek, err := Peek(p)
		if err != nil {
			t.Fatal(err)
		}
		if peek.Params != nil || peek.Step != st.Step || peek.Config != st.Config || peek.RNG[0] != math.MaxUint64 {
			t.Fatalf("Peek = %+v", peek)
		}
		// The file is a plain safetensors file with the parameters under their llm.c names.
		f, err := safetensors.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		lnfb, err := f.Float32("lnfb")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "lnfb", lnfb, st.Params[len(st.Params)-cfg.Channels:])
		// Created as any new file is: 0666 less the umask.
		ref := filepath.Join(t.TempDir(), "ref")
		os.WriteFile(ref, nil, 0o666)
		fi, _ := os.Stat(p)
		if want, _ := os.Stat(ref); fi.Mode().Perm() != want.Mode().Perm() {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), want.Mode().Perm())
		}
	}
}

// failAfter passes n bytes through, then fails every write.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errors.New("injected: no space left on device")
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestCrashSafety(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ckpt.safetensors")
	a := randomState(1, true)
	if err := Save(p, a); err != nil {
		t.Fatal(err)
	}
	b := randomState(2, true)
	for _, n := range []int{0, 100, 5000, 30000} { // inside the header, early data, later data (the file is ~34 kB)
		err := save(p, b, func(w io.Writer) io.Writer { return &failAfter{w: w, n: n} })
		if err == nil || !strings.Contains(err.Error(), "injected: no space left on device") || !strings.Contains(err.Error(), "any previous file is untouched") {
			t.Fatalf("failing write after %d bytes: error %v", n, err)
		}
		got, err := Load(p)
		if err != nil {
			t.Fatalf("after a failed save: %v", err)
		}
		checkSame(t, got, a)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("directory holds %v after a failed save, want only the checkpoint", names)
		}
	}
	// A successful save replaces the file.
	if err := Save(p, b); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, got, b)

	// Saving into a directory that does not exist fails without creating anything.
	if err := Save(filepath.Join(dir, "missing", "c.safetensors"), a); err == nil {
		t.Error("save into a missing directory succeeded")
	}
	if os.Geteuid() != 0 { // root ignores permissions
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o755)
		rp := filepath.Join(ro, "c.safetensors")
		if err := Save(rp, a); err != nil {
			t.Fatal(err)
		}
		os.Chmod(ro, 0o555)
		defer os.Chmod(ro, 0o755)
		if err := Save(rp, b); err == nil {
			t.Error("save into a read-only directory succeeded")
		}
		got, err := Load(rp)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, got, a)
	}
}

func TestSaveErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.safetensors")
	cases := []struct {
		edit func(*State)
		want string
	}{
		{func(s *State) { s.Params = s.Params[1:] }, "the state has 2847 parameter values, config"},
		{func(s *State) { s.AdamV = nil }, "AdamM and AdamV must both be set or both be nil"},
		{func(s *State) { s.AdamM = s.AdamM[:10] }, "the optimizer moments have 10 (AdamM) and 2848 (AdamV) values, want 2848 each"},
		{func(s *State) { s.Config.NumHeads = 3 }, "channels 8 must be a positive multiple of num_heads 3"},
		{func(s *State) { s.Step = -1 }, "step -1 is negative"},
		{func(s *State) { s.Extra[""] = nil }, "an extra buffer has an empty name"},
	}
	for _, c := range cases {
		st := randomState(1, true)
		c.edit(st)
		err := Save(p, st)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v, want %q and the path", err, c.want)
		}
	}
	if err := Save(p, nil); err == nil || !strings.Contains(err.Error(), "nil state") {
		t.Errorf("nil state: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("an invalid state left a file behind")
	}
}

// writeEdited writes a checkpoint whose tensors and metadata were edited after encoding.
func writeEdited(t *testing.T, st *State, edit func([]safetensors.Tensor, map[string]string) ([]safetensors.Tensor, map[string]string)) string {
	t.Helper()
	ts, meta, err := encode(st)
	if err != nil {
		t.Fatal(err)
	}
	ts, meta = edit(ts, meta)
	p := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := safetensors.WriteFile(p, ts, meta); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	dropTensor := func(name string) func([]safetensors.Tensor, map[string]string) ([]safetensors.Tensor, map[string]string) {
		return func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			out := ts[:0]
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out, m
		}
	}
	setMeta := func(doc string) func([]safetensors.Tensor, map[string]string) ([]safetensors.Tensor, map[string]string) {
		return func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			return ts, map[string]string{MetadataKey: doc}
		}
	}
	replaceMeta := func(old, new string) func([]safetensors.Tensor, map[string]string) ([]safetensors.Tensor, map[string]string) {
		return func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			if !strings.Contains(m[MetadataKey], old) {
				t.Fatalf("metadata %s lacks %q", m[MetadataKey], old)
			}
			return ts, map[string]string{MetadataKey: strings.Replace(m[MetadataKey], old, new, 1)}
		}
	}
	cases := []struct {
		name string
		adam bool
		edit func([]safetensors.Tensor, map[string]string) ([]safetensors.Tensor, map[string]string)
		want string
	}{
		{"no metadata", false, func(ts []safetensors.Tensor, _ map[string]string) ([]safetensors.Tensor, map[string]string) {
			return ts, map[string]string{"format": "pt"}
		}, `not a vkgrad checkpoint (a safetensors file without "vkgrad" metadata`},
		{"other format", false, replaceMeta(`"format":"vkgrad-checkpoint"`, `"format":"other"`), `not a vkgrad checkpoint (metadata format "other"`},
		{"too new", false, replaceMeta(`"version":1`, `"version":7`), "version 7 is newer than this build reads (2)"},
		{"version zero", false, replaceMeta(`"version":1`, `"version":0`), "invalid version 0"},
		{"bad json", false, setMeta(`{"format":`), `metadata "vkgrad"`},
		{"bad config", false, replaceMeta(`"num_heads":2`, `"num_heads":0`), "num_heads 0 must be positive"},
		{"bad rng", false, replaceMeta(`"18446744073709551615"`, `"-3"`), `rng[0] = "-3" is not a uint64`},
		{"negative step", false, replaceMeta(`"step":1234`, `"step":-5`), "step -5 is negative"},
		{"missing param", false, dropTensor("fcw"), `tensor "fcw" is missing (config L=2 NH=2 C=8 maxT=8 V=50 Vp=128)`},
		{"missing moment", true, dropTensor("adam_v.lnfb"), `tensor "adam_v.lnfb" is missing`},
		{"config mismatch", false, replaceMeta(`"num_layers":2`, `"num_layers":3`), `tensor "ln1w" has shape [2 8], config L=3 NH=2 C=8 maxT=8 V=50 Vp=128 needs [3 8]`},
		{"moments but no flag", true, replaceMeta(`"has_adam":true`, `"has_adam":false`), `tensor "adam_m.attprojb" present but the metadata says the checkpoint has no optimizer state`},
		{"unexpected tensor", false, func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			return append(ts, safetensors.NewF32("value_head", []int{8}, make([]float32, 8))), m
		}, `unexpected tensor "value_head"`},
		{"extra not flat", true, func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
			return append(ts, safetensors.NewF32("extra.w", []int{2, 4}, make([]float32, 8))), m
		}, `tensor "extra.w" has shape [2 4], want one dimension`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeEdited(t, randomState(3, c.adam), c.edit)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v\nwant it to contain %q and the path", err, c.want)
			}
		})
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := Save(good, randomState(4, true)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	trunc := filepath.Join(dir, "trunc.safetensors")
	os.WriteFile(trunc, b[:len(b)-100], 0o644)
	if _, err := Load(trunc); err == nil || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), trunc) {
		t.Errorf("truncated file: %v", err)
	}
	junk := filepath.Join(dir, "model.bin")
	os.WriteFile(junk, []byte("\x76\x0c\x35\x01\x03\x00\x00\x00 this is an llm.c checkpoint header"), 0o644)
	if _, err := Load(junk); err == nil || !strings.Contains(err.Error(), "is not a readable vkgrad checkpoint") {
		t.Errorf("llm.c file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "absent")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func benchState(b *testing.B) *State {
	c, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		b.Fatal(err)
	}
	n := c.NumParams()
	st := &State{Config: c, Params: make([]float32, n), AdamM: make([]float32, n), AdamV: make([]float32, n)}
	for i := range st.Params {
		st.Params[i] = float32(i%1000) * 1e-3
	}
	b.SetBytes(int64(3 * 4 * n))
	return st
}

func BenchmarkSave(b *testing.B) {
	st := benchState(b)
	p := filepath.Join(b.TempDir(), "c.safetensors")
	for b.Loop() {
		if err := Save(p, st); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	st := benchState(b)
	p := filepath.Join(b.TempDir(), "c.safetensors")
	if err := Save(p, st); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLlamaRoundTrip saves a Llama-family state (version 2, Hugging Face tensor names) and
// reads back the same config, parameters and moments; a version 1 document claiming a Llama
// config is refused.
func TestLlamaRoundTrip(t *testing.T) {
	cfg, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.NumParams()
	r := rand.New(rand.NewPCG(3, 4))
	fill := func() []float32 {
		b := make([]float32, n)
		for i := range b {
			b[i] = r.Float32() - 0.5
		}
		return b
	}
	st := &State{Llama: &cfg, Step: 7, Params: fill(), AdamM: fill(), AdamV: fill(), Meta: map[string]string{"k": "v"}}
	p := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Save(p, st); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Llama == nil || !reflect.DeepEqual(*got.Llama, cfg) || got.Step != 7 || got.Meta["k"] != "v" {
		t.Fatalf("read back config %+v step %d meta %v", got.Llama, got.Step, got.Meta)
	}
	for i := range st.Params {
		if got.Params[i] != st.Params[i] || got.AdamM[i] != st.AdamM[i] || got.AdamV[i] != st.AdamV[i] {
			t.Fatalf("value %d differs", i)
		}
	}
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.Info("model.layers.0.self_attn.q_norm.weight"); !ok {
		t.Errorf("no tensor under its Hugging Face name: %v", f.Names()[:3])
	}
	bad := writeEdited(t, st, func(ts []safetensors.Tensor, m map[string]string) ([]safetensors.Tensor, map[string]string) {
		return ts, map[string]string{MetadataKey: strings.Replace(m[MetadataKey], `"version":2`, `"version":1`, 1)}
	})
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "version 2 holds a Llama-family model") {
		t.Errorf("version 1 with a Llama config: error %v", err)
	}
}

// A LoRA state holds the base weights and the adapters, and moments for the adapters only.
func TestLoRARoundTrip(t *testing.T) {
	cfg, err := llama.Preset("qwen3-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Layers = 1
	lo := llama.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "down_proj"}}
	nA := 0
	for _, s := range cfg.LoRASpecs(lo) {
		nA += s.Numel()
	}
	r := rand.New(rand.NewPCG(5, 6))
	fill := func(n int) []float32 {
		b := make([]float32, n)
		for i := range b {
			b[i] = r.Float32()
		}
		return b
	}
	st := &State{Llama: &cfg, LoRA: &lo, Step: 3, Params: fill(cfg.NumParams() + nA), AdamM: fill(nA), AdamV: fill(nA)}
	p := filepath.Join(t.TempDir(), "c.safetensors")
	if err := Save(p, st); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.LoRA == nil || !reflect.DeepEqual(*got.LoRA, lo) || len(got.AdamM) != nA || len(got.Params) != len(st.Params) {
		t.Fatalf("read back LoRA %+v, %d moments, %d parameters", got.LoRA, len(got.AdamM), len(got.Params))
	}
	for i := range st.Params {
		if got.Params[i] != st.Params[i] {
			t.Fatalf("parameter %d differs", i)
		}
	}
	for i := range st.AdamV {
		if got.AdamV[i] != st.AdamV[i] {
			t.Fatalf("moment %d differs", i)
		}
	}
	st.AdamM = fill(cfg.NumParams())
	if err := Save(p, st); err == nil {
		t.Fatal("moments of the whole model were accepted for a LoRA state")
	}
}
