package hf

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

func randomParams(cfg gpt2.Config, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := make([]float32, cfg.NumParams())
	for i := range p {
		p[i] = float32(rng.NormFloat64())
	}
	// Padded vocabulary rows are zero, as everywhere in vkgrad and llm.c.
	clear(p[cfg.VocabSize*cfg.Channels : cfg.PaddedVocabSize*cfg.Channels])
	return p
}

func TestExportImportRoundTrip(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 16, VocabSize: 300, PaddedVocabSize: 384, NumLayers: 3, NumHeads: 4, Channels: 32}
	params := randomParams(cfg, 1)
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	if err := Export(p, cfg, params); err != nil {
		t.Fatal(err)
	}
	got, gp, err := Import(p, ImportOptions{NumHeads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got != cfg {
		t.Fatalf("config %v, want %v", got, cfg)
	}
	for i := range params {
		if math.Float32bits(gp[i]) != math.Float32bits(params[i]) {
			t.Fatalf("param %d = %v, want %v", i, gp[i], params[i])
		}
	}
	// The file holds HF's layout: c_attn.weight is (C, 3C) with element [i][o] = qkvw[o][i].
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata()["format"] != "pt" {
		t.Errorf("metadata %v, want format=pt", f.Metadata())
	}
	cattn, err := f.Float32("h.1.attn.c_attn.weight")
	if err != nil {
		t.Fatal(err)
	}
	C := cfg.Channels
	qkvw := params[offsets(cfg)["qkvw"]+3*C*C:]
	for i := range C {
		for o := range 3 * C {
			if cattn[i*3*C+o] != qkvw[o*C+i] {
				t.Fatalf("c_attn[%d][%d] = %v, want qkvw[%d][%d] = %v", i, o, cattn[i*3*C+o], o, i, qkvw[o*C+i])
			}
		}
	}
	if info, _ := f.Info("wte.weight"); info.Shape[0] != cfg.VocabSize {
		t.Errorf("wte.weight shape %v, want the unpadded vocabulary %d rows", info.Shape, cfg.VocabSize)
	}

	// With a config.json written beside it, the head count needs no argument.
	if err := WriteConfig(filepath.Join(dir, "config.json"), cfg); err != nil {
		t.Fatal(err)
	}
	got, _, err = Import(p, ImportOptions{})
	if err != nil || got != cfg {
		t.Fatalf("import with config.json: %v, %v; want %v", got, err, cfg)
	}
	// A directory stands for the model.safetensors inside it.
	got, gp, err = Import(dir, ImportOptions{})
	if err != nil || got != cfg || gp[len(gp)-1] != params[len(params)-1] {
		t.Fatalf("import of the directory: %v, %v; want %v", got, err, cfg)
	}
}

// code gives every element of every hand-built tensor a distinct value.
func code(tensor, i int) float32 { return float32(tensor*10000 + i) }

// handBuilt lays out a GPT-2 the way Hugging Face does, written with the safetensors writer
// directly (not Export), with values that name their tensor and position.
func handBuilt(cfg gpt2.Config, prefix string) []safetensors.Tensor {
	C, V, T := cfg.Channels, cfg.VocabSize, cfg.MaxSeqLen
	var ts []safetensors.Tensor
	add := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = code(len(ts), i)
		}
		ts = append(ts, safetensors.NewF32(prefix+name, shape, data))
	}
	add("wte.weight", V, C)
	add("wpe.weight", T, C)
	for l := range cfg.NumLayers {
		h := fmt.Sprintf("h.%d.", l)
		add(h+"ln_1.weight", C)
		add(h+"ln_1.bias", C)
		add(h+"attn.bias", 1, 1, T, T)
		add(h+"attn.c_attn.weight", C, 3*C)
		add(h+"attn.c_attn.bias", 3*C)
		add(h+"attn.c_proj.weight", C, C)
		add(h+"attn.c_proj.bias", C)
		add(h+"ln_2.weight", C)
		add(h+"ln_2.bias", C)
		add(h+"mlp.c_fc.weight", C, 4*C)
		add(h+"mlp.c_fc.bias", 4*C)
		add(h+"mlp.c_proj.weight", 4*C, C)
		add(h+"mlp.c_proj.bias", C)
		add(h + "attn.masked_bias")
	}
	add("ln_f.weight", C)
	add("ln_f.bias", C)
	return ts
}

func writeModel(t *testing.T, ts []safetensors.Tensor, configJSON string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors")
	if err := safetensors.WriteFile(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	if configJSON != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(configJSON), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestImportHandBuilt(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 5, VocabSize: 7, PaddedVocabSize: 128, NumLayers: 2, NumHeads: 2, Channels: 6}
	ts := handBuilt(cfg, "transformer.")
	p := writeModel(t, ts, `{"n_head": 2, "n_embd": 6, "n_layer": 2, "model_type": "gpt2"}`)
	got, params, err := Import(p, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got != cfg {
		t.Fatalf("config %v, want %v", got, cfg)
	}
	byName := make(map[string]int)
	for i, x := range ts {
		byName[strings.TrimPrefix(x.Name, "transformer.")] = i
	}
	C, V, Vp, T := cfg.Channels, cfg.VocabSize, cfg.PaddedVocabSize, cfg.MaxSeqLen
	// Expected parameter buffer, element by element, in llm.c order.
	var want []float32
	plain := func(name string, n int) {
		for i := range n {
			want = append(want, code(byName[name], i))
		}
	}
	// transposed: llm.c (out, in)[o][i] is HF (in, out)[i][o].
	transposed := func(name string, in, out int) {
		for o := range out {
			for i := range in {
				want = append(want, code(byName[name], i*out+o))
			}
		}
	}
	plain("wte.weight", V*C)
	want = append(want, make([]float32, (Vp-V)*C)...)
	plain("wpe.weight", T*C)
	perLayer := func(f func(h string)) {
		for l := range cfg.NumLayers {
			f(fmt.Sprintf("h.%d.", l))
		}
	}
	perLayer(func(h string) { plain(h+"ln_1.weight", C) })
	perLayer(func(h string) { plain(h+"ln_1.bias", C) })
	perLayer(func(h string) { transposed(h+"attn.c_attn.weight", C, 3*C) })
	perLayer(func(h string) { plain(h+"attn.c_attn.bias", 3*C) })
	perLayer(func(h string) { transposed(h+"attn.c_proj.weight", C, C) })
	perLayer(func(h string) { plain(h+"attn.c_proj.bias", C) })
	perLayer(func(h string) { plain(h+"ln_2.weight", C) })
	perLayer(func(h string) { plain(h+"ln_2.bias", C) })
	perLayer(func(h string) { transposed(h+"mlp.c_fc.weight", C, 4*C) })
	perLayer(func(h string) { plain(h+"mlp.c_fc.bias", 4*C) })
	perLayer(func(h string) { transposed(h+"mlp.c_proj.weight", 4*C, C) })
	perLayer(func(h string) { plain(h+"mlp.c_proj.bias", C) })
	plain("ln_f.weight", C)
	plain("ln_f.bias", C)
	if len(want) != len(params) {
		t.Fatalf("%d params, want %d", len(params), len(want))
	}
	for i := range want {
		if params[i] != want[i] {
			t.Fatalf("param %d = %v, want %v", i, params[i], want[i])
		}
	}
}

func TestImportHalfPrecision(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 5, VocabSize: 7, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 6}
	ts := handBuilt(cfg, "")
	for i := range ts {
		for j := range ts[i].F32Data {
			ts[i].F32Data[j] = float32(j) / 4 // exact in bf16 for these sizes
		}
		ts[i].DType = safetensors.BF16
	}
	_, params, err := Import(writeModel(t, ts, ""), ImportOptions{NumHeads: 2})
	if err != nil {
		t.Fatal(err)
	}
	// wte row 1, column 2 is element 8 of wte.
	if params[8] != 2 {
		t.Errorf("wte[1][2] = %v, want 2", params[8])
	}
}

func TestNumHeadsTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.safetensors") // no config.json beside it
	for C, want := range map[int]int{768: 12, 1024: 16, 1280: 20, 1600: 25} {
		got, err := numHeads(p, gpt2.Config{Channels: C}, ImportOptions{})
		if err != nil || got != want {
			t.Errorf("C=%d: %d heads, %v; want %d", C, got, err, want)
		}
	}
	if got, err := numHeads(p, gpt2.Config{Channels: 768}, ImportOptions{NumHeads: 6}); err != nil || got != 6 {
		t.Errorf("explicit heads: %d, %v; want 6", got, err)
	}
	if _, err := numHeads(p, gpt2.Config{Channels: 96}, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "cannot tell the number of heads for width 96") {
		t.Errorf("unknown width: %v", err)
	}
}

func TestImportErrors(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 5, VocabSize: 7, PaddedVocabSize: 128, NumLayers: 2, NumHeads: 2, Channels: 6}
	const goodJSON = `{"n_head": 2}`
	drop := func(name string) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			out := ts[:0]
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	extra := func(name string, shape ...int) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			n := 1
			for _, d := range shape {
				n *= d
			}
			return append(ts, safetensors.NewF32(name, shape, make([]float32, n)))
		}
	}
	reshape := func(name string, shape ...int) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == name {
					ts[i].Shape = shape
				}
			}
			return ts
		}
	}
	same := func(ts []safetensors.Tensor) []safetensors.Tensor { return ts }
	cases := []struct {
		name   string
		edit   func([]safetensors.Tensor) []safetensors.Tensor
		config string
		opts   ImportOptions
		want   string
	}{
		{"missing layer tensor", drop("h.1.mlp.c_fc.bias"), goodJSON, ImportOptions{}, `missing tensor "h.1.mlp.c_fc.bias"`},
		{"missing ln_f", drop("ln_f.bias"), goodJSON, ImportOptions{}, `missing tensor "ln_f.bias"`},
		{"missing wte", drop("wte.weight"), goodJSON, ImportOptions{}, `missing tensor "wte.weight"`},
		{"missing wpe", drop("wpe.weight"), goodJSON, ImportOptions{}, `missing tensor "wpe.weight"`},
		{"layer gap", extra("h.5.ln_1.weight", 6), goodJSON, ImportOptions{}, `missing tensor "h.2.ln_1.weight"`},
		{"unexpected", extra("h.0.attn.rotary", 6), goodJSON, ImportOptions{}, `unexpected tensor "h.0.attn.rotary"`},
		{"unexpected top", extra("score.weight", 6), goodJSON, ImportOptions{}, `unexpected tensor "score.weight"`},
		{"bad index", extra("h.x.ln_1.weight", 6), goodJSON, ImportOptions{}, `tensor "h.x.ln_1.weight": "x" is not a layer index`},
		{"duplicate", extra("transformer.ln_f.bias", 6), goodJSON, ImportOptions{}, `tensors "ln_f.bias" and "transformer.ln_f.bias" are the same parameter`},
		{"transposed shape", reshape("h.0.attn.c_attn.weight", 18, 6), goodJSON, ImportOptions{}, `tensor "h.0.attn.c_attn.weight" has shape [18 6], want [6 18]`},
		{"wpe width", reshape("wpe.weight", 6, 5), goodJSON, ImportOptions{}, `tensor "wpe.weight" has shape [6 5], want (max_seq_len, 6)`},
		{"wte rank", reshape("wte.weight", 42), goodJSON, ImportOptions{}, `tensor "wte.weight" has shape [42], want (vocab_size, channels)`},
		{"config n_embd", same, `{"n_head": 2, "n_embd": 8}`, ImportOptions{}, "n_embd = 8, but the weights in"},
		{"config no n_head", same, `{"n_embd": 6}`, ImportOptions{}, "no n_head field"},
		{"config bad json", same, `{"n_head": `, ImportOptions{}, "config.json: unexpected end of JSON input"},
		{"config vs option", same, goodJSON, ImportOptions{NumHeads: 3}, "n_head = 2 disagrees with the 3 heads asked for"},
		{"heads do not divide", same, "", ImportOptions{NumHeads: 4}, "channels 6 must be a positive multiple of num_heads 4"},
		{"no head count", same, "", ImportOptions{}, "cannot tell the number of heads for width 6"},
		{"negative heads", same, "", ImportOptions{NumHeads: -2}, "number of heads -2 must be positive"},
		{"untied head", extra("lm_head.weight", 7, 6), goodJSON, ImportOptions{}, `tensor "lm_head.weight" differs from "wte.weight"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeModel(t, c.edit(handBuilt(cfg, "")), c.config)
			_, _, err := Import(p, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant it to contain %q", err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), filepath.Dir(p)) {
				t.Errorf("error %v does not name the file", err)
			}
		})
	}
	// A tied lm_head equal to wte is accepted.
	ts := handBuilt(cfg, "")
	ts = append(ts, safetensors.NewF32("lm_head.weight", []int{7, 6}, ts[0].F32Data))
	if _, _, err := Import(writeModel(t, ts, goodJSON), ImportOptions{}); err != nil {
		t.Errorf("tied lm_head: %v", err)
	}
}

func TestExportErrorsAndConfig(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 4, VocabSize: 10, PaddedVocabSize: 128, NumLayers: 1, NumHeads: 2, Channels: 4}
	dir := t.TempDir()
	if err := Export(filepath.Join(dir, "m.safetensors"), cfg, make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "3 parameters given") {
		t.Errorf("short params: %v", err)
	}
	bad := cfg
	bad.NumLayers = 0
	if err := Export(filepath.Join(dir, "m.safetensors"), bad, nil); err == nil || !strings.Contains(err.Error(), "num_layers 0") {
		t.Errorf("bad config: %v", err)
	}
	cp := filepath.Join(dir, "config.json")
	g := gpt2.Config{MaxSeqLen: 1024, VocabSize: gpt2.GPT2Vocab, PaddedVocabSize: 50304, NumLayers: 12, NumHeads: 12, Channels: 768}
	if err := WriteConfig(cp, g); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cp)
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{"n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "vocab_size": 50257, "eos_token_id": 50256, "layer_norm_epsilon": 1e-5} {
		if doc[k] != v {
			t.Errorf("config.json %s = %v, want %v", k, doc[k], v)
		}
	}
	if doc["activation_function"] != "gelu_new" || doc["model_type"] != "gpt2" {
		t.Errorf("config.json %v", doc)
	}
}

func BenchmarkExportImport(b *testing.B) {
	cfg, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		b.Fatal(err)
	}
	params := randomParams(cfg, 2)
	p := filepath.Join(b.TempDir(), "model.safetensors")
	b.SetBytes(int64(4 * len(params)))
	for b.Loop() {
		if err := Export(p, cfg, params); err != nil {
			b.Fatal(err)
		}
		if _, _, err := Import(p, ImportOptions{NumHeads: cfg.NumHeads}); err != nil {
			b.Fatal(err)
		}
	}
}
