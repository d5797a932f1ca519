package llmc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/testutil"
	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

func fixture(t *testing.T, name string) string {
	return filepath.Join(testutil.FixturesDir(t), "llmc", name)
}

var tinyCfg = gpt2.Config{MaxSeqLen: 64, VocabSize: 500, PaddedVocabSize: 512, NumLayers: 2, NumHeads: 4, Channels: 64}

func TestFixtureCheckpoint(t *testing.T) {
	p := fixture(t, "tiny_ckpt.bin")
	cfg, params, err := ReadCheckpoint(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != tinyCfg {
		t.Fatalf("config %v, want %v", cfg, tinyCfg)
	}
	st, _ := os.Stat(p)
	if want := int64(headerBytes + 4*cfg.NumParams()); st.Size() != want || len(params) != cfg.NumParams() {
		t.Fatalf("file %d bytes, %d params; want %d bytes for %d params", st.Size(), len(params), want, cfg.NumParams())
	}
	var sumsq float64
	for i, v := range params {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("param %d = %v", i, v)
		}
		sumsq += float64(v) * float64(v)
	}
	if sumsq == 0 {
		t.Fatal("all parameters are zero")
	}
	// llm.c keeps the padded vocabulary rows of wte at zero.
	for i := cfg.VocabSize * cfg.Channels; i < cfg.PaddedVocabSize*cfg.Channels; i++ {
		if params[i] != 0 {
			t.Fatalf("padded wte element %d = %v, want 0", i, params[i])
		}
	}
	// Writing the parameters back reproduces the file byte for byte.
	out := filepath.Join(t.TempDir(), "v3.bin")
	if err := WriteCheckpoint(out, cfg, params); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(out)
	if !bytes.Equal(a, b) {
		t.Fatal("rewritten v3 checkpoint differs from the fixture")
	}
}

func TestBF16RoundTrip(t *testing.T) {
	cfg, params, err := ReadCheckpoint(fixture(t, "tiny_ckpt.bin"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "v5.bin")
	if err := WriteCheckpointBF16(out, cfg, params); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(out)
	if want := int64(headerBytes + 2*cfg.NumParams()); st.Size() != want {
		t.Fatalf("v5 file %d bytes, want %d", st.Size(), want)
	}
	raw, _ := os.ReadFile(out)
	if v := binary.LittleEndian.Uint32(raw[4:]); v != VersionBF16 {
		t.Fatalf("header version %d, want %d", v, VersionBF16)
	}
	cfg5, p5, err := ReadCheckpoint(out)
	if err != nil {
		t.Fatal(err)
	}
	if cfg5 != cfg {
		t.Fatalf("config %v, want %v", cfg5, cfg)
	}
	changed := 0
	for i, v := range params {
		// Round to nearest: error at most half a bf16 ulp, 2^-8 relative.
		if d := math.Abs(float64(p5[i] - v)); d > math.Abs(float64(v))/256 {
			t.Fatalf("param %d: %v became %v", i, v, p5[i])
		}
		if p5[i] != v {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("bf16 round trip changed nothing: parameters were not narrowed")
	}
	// Writing bf16 values again is exact.
	out2 := filepath.Join(t.TempDir(), "v5b.bin")
	if err := WriteCheckpointBF16(out2, cfg5, p5); err != nil {
		t.Fatal(err)
	}
	raw2, _ := os.ReadFile(out2)
	if !bytes.Equal(raw, raw2) {
		t.Fatal("bf16 -> float32 -> bf16 is not the identity")
	}
}

func TestFixtureState(t *testing.T) {
	p := fixture(t, "tiny_state.bin")
	s, err := ReadDebugState(p, tinyCfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.B != 4 || s.T != 32 {
		t.Fatalf("B=%d T=%d, want 4, 32", s.B, s.T)
	}
	V := tinyCfg.VocabSize
	// The stored loss is the mean cross-entropy of the stored logits at the stored targets:
	// this checks x, y, logits and loss all sit at the right offsets.
	var loss float64
	for i := 0; i < s.B*s.T; i++ {
		row := s.Logits[i*V : (i+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var z float64
		for _, v := range row {
			z += math.Exp(float64(v) - mx)
		}
		loss += mx + math.Log(z) - float64(row[s.Y[i]])
	}
	loss /= float64(s.B * s.T)
	if math.Abs(loss-float64(s.Loss)) > 1e-5 {
		t.Errorf("cross-entropy of logits %v, stored loss %v", loss, s.Loss)
	}
	lossTxt, err := os.ReadFile(fixture(t, "tiny_losses.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := strconv.ParseFloat(strings.Fields(string(lossTxt))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(first-float64(s.Loss)) > 1e-5 {
		t.Errorf("state loss %v, tiny_losses.txt step 0 %v", s.Loss, first)
	}
	// Padded vocabulary rows get no gradient; the final LayerNorm bias does.
	C := tinyCfg.Channels
	for i := V * C; i < tinyCfg.PaddedVocabSize*C; i++ {
		if s.Grads[i] != 0 {
			t.Fatalf("gradient of padded wte element %d = %v, want 0", i, s.Grads[i])
		}
	}
	lnfb := s.Grads[len(s.Grads)-C:]
	var norm float64
	for _, g := range lnfb {
		norm += float64(g) * float64(g)
	}
	if norm == 0 {
		t.Error("lnfb gradient is all zero")
	}

	out := filepath.Join(t.TempDir(), "state.bin")
	if err := WriteDebugState(out, tinyCfg, s); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(p)
	b, _ := os.ReadFile(out)
	if !bytes.Equal(a, b) {
		t.Fatal("rewritten debug state differs from the fixture")
	}
}

// corrupt writes a copy of the fixture with edit applied and returns its path.
func corrupt(t *testing.T, fixtureName string, edit func([]byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(fixture(t, fixtureName))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.bin")
	if err := os.WriteFile(p, edit(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func setInt(i int, v int32) func([]byte) []byte {
	return func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		return b
	}
}

func TestCheckpointErrors(t *testing.T) {
	n := tinyCfg.NumParams()
	size := headerBytes + 4*n
	cases := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"magic", setInt(0, 1234), "header magic 1234, want 20240326"},
		{"state magic", setInt(0, StateMagic), "is a debug state's"},
		{"version", setInt(1, 4), "header version 4 unsupported"},
		{"maxT zero", setInt(2, 0), "maxT (max_seq_len) = 0 must be positive"},
		{"V negative", setInt(3, -5), "V (vocab_size) = -5 must be positive"},
		{"L zero", setInt(4, 0), "L (num_layers) = 0 must be positive"},
		{"NH zero", setInt(5, 0), "NH (num_heads) = 0 must be positive"},
		{"C zero", setInt(6, 0), "C (channels) = 0 must be positive"},
		{"Vp zero", setInt(7, 0), "Vp (padded_vocab_size) = 0 must be positive"},
		{"Vp < V", setInt(7, 256), "Vp (padded_vocab_size) = 256 is smaller than V (vocab_size) = 500"},
		{"C % NH", setInt(5, 3), "C (channels) = 64 is not a multiple of NH (num_heads) = 3"},
		{"huge", setInt(6, math.MaxInt32-3), "impossibly large"},
		{"large L", setInt(4, math.MaxInt32), "(107339822648640 parameters) needs 429359290595584 bytes, file has 548864"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-10] }, fmt.Sprintf("truncated: version 3 with %v (%d parameters) needs %d bytes, file has %d", tinyCfg, n, size, size-10)},
		{"trailing", func(b []byte) []byte { return append(b, 1, 2, 3) }, fmt.Sprintf("3 trailing bytes: version 3 with %v (%d parameters) needs %d bytes, file has %d", tinyCfg, n, size, size+3)},
		{"v5 header on v3 data", setInt(1, VersionBF16), fmt.Sprintf("trailing bytes: version 5 with %v (%d parameters) needs %d bytes", tinyCfg, n, headerBytes+2*n)},
		{"header cut", func(b []byte) []byte { return b[:500] }, "truncated: 500 bytes, the header alone needs 1024"},
		{"wrong L", setInt(4, 3), "truncated: version 3 with L=3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := corrupt(t, "tiny_ckpt.bin", c.edit)
			_, _, err := ReadCheckpoint(p)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v\nwant it to contain %q and the path", err, c.want)
			}
		})
	}
	if _, _, err := ReadCheckpoint(filepath.Join(t.TempDir(), "missing.bin")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing file: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestDebugStateErrors(t *testing.T) {
	size := 805892
	cases := []struct {
		name string
		edit func([]byte) []byte
		cfg  gpt2.Config
		want string
	}{
		{"magic", setInt(0, 7), tinyCfg, "header magic 7, want 20240327"},
		{"checkpoint magic", setInt(0, CheckpointMagic), tinyCfg, "is a model checkpoint's"},
		{"version", setInt(1, 3), tinyCfg, "header version 3 unsupported (want 2)"},
		{"B zero", setInt(2, 0), tinyCfg, "B (batch size) = 0 must be positive"},
		{"T negative", setInt(3, -1), tinyCfg, "T (sequence length) = -1 must be positive"},
		{"T too long", setInt(3, 65), tinyCfg, "T (sequence length) = 65 exceeds the config's max_seq_len 64"},
		{"B wrong", setInt(2, 5), tinyCfg, "truncated: B=5 T=32 with config"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-4] }, tinyCfg, fmt.Sprintf("truncated: B=4 T=32 with config %v needs %d bytes, file has %d", tinyCfg, size, size-4)},
		{"trailing", func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0) }, tinyCfg, "5 trailing bytes"},
		{"x out of range", setInt(headerInts+37, 500), tinyCfg, "x[37] (batch 1, position 5) = 500 is outside the vocabulary [0, 500)"},
		{"y negative", setInt(headerInts+128+3, -2), tinyCfg, "y[3] (batch 0, position 3) = -2 is outside the vocabulary"},
		{"header cut", func(b []byte) []byte { return b[:100] }, tinyCfg, "truncated: 100 bytes, the header alone needs 1024"},
	}
	other := tinyCfg
	other.NumLayers = 3
	cases = append(cases, struct {
		name string
		edit func([]byte) []byte
		cfg  gpt2.Config
		want string
	}{"other model", func(b []byte) []byte { return b }, other, fmt.Sprintf("with config %v needs", other)})
	bad := tinyCfg
	bad.NumHeads = 0
	cases = append(cases, struct {
		name string
		edit func([]byte) []byte
		cfg  gpt2.Config
		want string
	}{"invalid config", func(b []byte) []byte { return b }, bad, "num_heads 0 must be positive"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := corrupt(t, "tiny_state.bin", c.edit)
			_, err := ReadDebugState(p, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %v\nwant it to contain %q and the path", err, c.want)
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.bin")
	params := make([]float32, tinyCfg.NumParams())
	if err := WriteCheckpoint(p, tinyCfg, params[1:]); err == nil || !strings.Contains(err.Error(), "136959 parameters given, config") {
		t.Errorf("short params: %v", err)
	}
	bad := tinyCfg
	bad.Channels = 63
	if err := WriteCheckpoint(p, bad, params); err == nil || !strings.Contains(err.Error(), "channels 63") {
		t.Errorf("bad config: %v", err)
	}
	if err := WriteCheckpoint(filepath.Join(dir, "no", "such", "dir.bin"), tinyCfg, params); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s behind", p)
	}

	s := &DebugState{B: 1, T: 2, X: []int32{1, 2}, Y: []int32{2, 3}, Logits: make([]float32, 2*tinyCfg.VocabSize), Grads: params}
	if err := WriteDebugState(p, tinyCfg, s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDebugState(p, tinyCfg)
	if err != nil || got.B != 1 || got.T != 2 || got.Y[1] != 3 {
		t.Fatalf("state round trip: %+v, %v", got, err)
	}
	for _, c := range []struct {
		edit func(*DebugState)
		want string
	}{
		{func(s *DebugState) { s.Y = s.Y[:1] }, "Y has 1 values, want 2"},
		{func(s *DebugState) { s.Logits = s.Logits[1:] }, "Logits has 999 values, want 1000"},
		{func(s *DebugState) { s.Grads = nil }, "Grads has 0 values"},
		{func(s *DebugState) { s.X[1] = 999 }, "x[1] (batch 0, position 1) = 999 is outside the vocabulary"},
		{func(s *DebugState) { s.T = 65 }, "T=65 exceeds the config's max_seq_len 64"},
		{func(s *DebugState) { s.B = 0 }, "B=0 T=2 must be positive"},
	} {
		s2 := *s
		s2.X = append([]int32(nil), s.X...)
		c.edit(&s2)
		if err := WriteDebugState(p, tinyCfg, &s2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if err := WriteDebugState(p, tinyCfg, nil); err == nil {
		t.Error("nil state accepted")
	}
}

// A hand-built v5 file: bf16 bit patterns widen exactly.
func TestReadBF16HandBuilt(t *testing.T) {
	cfg := gpt2.Config{MaxSeqLen: 1, VocabSize: 1, PaddedVocabSize: 1, NumLayers: 1, NumHeads: 1, Channels: 1}
	n := cfg.NumParams()
	var b []byte
	for _, v := range []int32{CheckpointMagic, VersionBF16, 1, 1, 1, 1, 1, 1} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	b = append(b, make([]byte, headerBytes-len(b))...)
	for i := range n {
		b = binary.LittleEndian.AppendUint16(b, uint16(0x3f80+i)) // 1, 1+2^-7, 1+2*2^-7, ...
	}
	p := filepath.Join(t.TempDir(), "v5.bin")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, params, err := ReadCheckpoint(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != cfg {
		t.Fatalf("config %v, want %v", got, cfg)
	}
	for i, v := range params {
		if want := float32(1 + float64(i)/128); v != want {
			t.Errorf("param %d = %v, want %v", i, v, want)
		}
		if safetensors.Float32ToBF16(v) != uint16(0x3f80+i) {
			t.Errorf("param %d does not narrow back to its bits", i)
		}
	}
}

func BenchmarkCheckpointRoundTrip(b *testing.B) {
	cfg, err := gpt2.Preset("gpt2-mini")
	if err != nil {
		b.Fatal(err)
	}
	params := make([]float32, cfg.NumParams())
	for i := range params {
		params[i] = float32(i%977) * 1e-3
	}
	p := filepath.Join(b.TempDir(), "model.bin")
	b.SetBytes(int64(4 * len(params)))
	for b.Loop() {
		if err := WriteCheckpoint(p, cfg, params); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ReadCheckpoint(p); err != nil {
			b.Fatal(err)
		}
	}
}
