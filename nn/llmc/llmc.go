// Package llmc reads and writes llm.c's GPT-2 checkpoints and debug states.
//
// Models and reference gradients move between vkgrad and llm.c through these files.
// [ReadCheckpoint] reads a model checkpoint, version 3 (float32) or 5 (bfloat16, widened to
// float32); [WriteCheckpoint] and [WriteCheckpointBF16] write one. [ReadDebugState] and
// [WriteDebugState] handle a [DebugState]: a batch with its logits, loss and gradients.
//
// # Formats
//
// Both formats are little-endian: a 256-int32 header, then the payload. A checkpoint's header
// is (20240326, version, maxT, V, L, NH, C, Vp), followed by every parameter in llm.c order
// ([gpt2.Config.ParamSpecs]). A debug state's header is (20240327, 2, B, T), followed by
// x int32[B*T], y int32[B*T], logits float32[B*T*V], the mean loss float32 and the gradients
// float32[NumParams]. The constants [CheckpointMagic], [StateMagic], [VersionFP32],
// [VersionBF16] and [StateVersion] name those numbers.
package llmc

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/vkgrad/vkgrad/nn/gpt2"
	"github.com/vkgrad/vkgrad/nn/safetensors"
)

const (
	// CheckpointMagic opens a model checkpoint header.
	CheckpointMagic = 20240326
	// StateMagic opens a debug state header.
	StateMagic = 20240327
	// VersionFP32 and VersionBF16 are the checkpoint versions this package reads and writes.
	VersionFP32 = 3
	VersionBF16 = 5
	// StateVersion is the debug state version.
	StateVersion = 2

	headerInts  = 256
	headerBytes = 4 * headerInts
	chunkElems  = 1 << 16
)

// checkpoint header field names, by index, for error messages.
var ckptFields = [8]string{"magic", "version", "maxT (max_seq_len)", "V (vocab_size)", "L (num_layers)", "NH (num_heads)", "C (channels)", "Vp (padded_vocab_size)"}

// readHeader reads the 256-int32 header of f, whose total size is size.
func readHeader(f *os.File, size int64, what string) ([headerInts]int32, error) {
	var h [headerInts]int32
	if size < headerBytes {
		return h, fmt.Errorf("llmc: %s %s: truncated: %d bytes, the header alone needs %d", what, f.Name(), size, headerBytes)
	}
	var buf [headerBytes]byte
	if _, err := io.ReadFull(f, buf[:]); err != nil {
		return h, fmt.Errorf("llmc: %s %s: reading header: %w", what, f.Name(), err)
	}
	for i := range h {
		h[i] = int32(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return h, nil
}

// configFromHeader validates the checkpoint header fields and builds the config.
func configFromHeader(h [headerInts]int32, path string) (gpt2.Config, int, error) {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("llmc: checkpoint %s: "+format, append([]any{path}, a...)...)
	}
	if h[0] != CheckpointMagic {
		if h[0] == StateMagic {
			return gpt2.Config{}, 0, errf("header magic %d is a debug state's, not a model checkpoint's (%d)", h[0], CheckpointMagic)
		}
		return gpt2.Config{}, 0, errf("header magic %d, want %d (not an llm.c model checkpoint)", h[0], CheckpointMagic)
	}
	version := int(h[1])
	if version != VersionFP32 && version != VersionBF16 {
		return gpt2.Config{}, 0, errf("header version %d unsupported (want %d for fp32 or %d for bf16)", version, VersionFP32, VersionBF16)
	}
	for i := 2; i < 8; i++ {
		if h[i] <= 0 {
			return gpt2.Config{}, 0, errf("header field %s = %d must be positive", ckptFields[i], h[i])
		}
	}
	cfg := gpt2.Config{MaxSeqLen: int(h[2]), VocabSize: int(h[3]), NumLayers: int(h[4]), NumHeads: int(h[5]), Channels: int(h[6]), PaddedVocabSize: int(h[7])}
	if cfg.PaddedVocabSize < cfg.VocabSize {
		return cfg, 0, errf("header field %s = %d is smaller than %s = %d", ckptFields[7], cfg.PaddedVocabSize, ckptFields[3], cfg.VocabSize)
	}
	if cfg.Channels%cfg.NumHeads != 0 {
		return cfg, 0, errf("header field %s = %d is not a multiple of %s = %d", ckptFields[6], cfg.Channels, ckptFields[5], cfg.NumHeads)
	}
	return cfg, version, nil
}

// numParams is cfg.NumParams guarded against overflow: header fields are attacker-sized int32s
// whose products can exceed int64. ok is false when the count is beyond any real file.
func numParams(cfg gpt2.Config) (int64, bool) {
	est := 0.0
	for _, p := range cfg.ParamSpecs() {
		e := 1.0
		for _, d := range p.Shape {
			e *= float64(d)
		}
		est += e
	}
	if est > 1<<50 {
		return 0, false
	}
	return int64(cfg.NumParams()), true
}

// checkSize compares a file's size with the size its header implies.
func checkSize(what, path string, size, want int64, detail string) error {
	switch {
	case size < want:
		return fmt.Errorf("llmc: %s %s: truncated: %s needs %d bytes, file has %d", what, path, detail, want, size)
	case size > want:
		return fmt.Errorf("llmc: %s %s: %d trailing bytes: %s needs %d bytes, file has %d", what, path, size-want, detail, want, size)
	}
	return nil
}

// ReadCheckpoint reads an llm.c model checkpoint, version 3 (float32) or 5 (bfloat16, widened
// to float32), returning its config and the flat parameter buffer in llm.c order.
func ReadCheckpoint(path string) (gpt2.Config, []float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return gpt2.Config{}, nil, fmt.Errorf("llmc: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return gpt2.Config{}, nil, fmt.Errorf("llmc: %w", err)
	}
	h, err := readHeader(f, st.Size(), "checkpoint")
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	cfg, version, err := configFromHeader(h, path)
	if err != nil {
		return gpt2.Config{}, nil, err
	}
	n, ok := numParams(cfg)
	if !ok {
		return gpt2.Config{}, nil, fmt.Errorf("llmc: checkpoint %s: header %v implies an impossibly large model (file has %d bytes)", path, cfg, st.Size())
	}
	elem := int64(4)
	if version == VersionBF16 {
		elem = 2
	}
	detail := fmt.Sprintf("version %d with %v (%d parameters)", version, cfg, n)
	if err := checkSize("checkpoint", path, st.Size(), headerBytes+n*elem, detail); err != nil {
		return gpt2.Config{}, nil, err
	}
	params := make([]float32, n)
	r := bufio.NewReaderSize(f, 1<<20)
	if version == VersionBF16 {
		err = readBF16(r, params)
	} else {
		err = readFloat32s(r, params)
	}
	if err != nil {
		return gpt2.Config{}, nil, fmt.Errorf("llmc: checkpoint %s: reading parameters: %w", path, err)
	}
	return cfg, params, nil
}

func readFloat32s(r io.Reader, dst []float32) error {
	return readChunks(r, dst, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
}

func readInt32s(r io.Reader, dst []int32) error {
	return readChunks(r, dst, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
}

func readBF16(r io.Reader, dst []float32) error {
	return readChunks(r, dst, 2, func(b []byte) float32 { return safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(b)) })
}

// readChunks fills dst with values of size bytes each, decoded by decode, reading a bounded
// chunk at a time so a large file needs no second copy in memory.
func readChunks[T any](r io.Reader, dst []T, size int, decode func([]byte) T) error {
	buf := make([]byte, size*chunkElems)
	for len(dst) > 0 {
		n := min(len(dst), chunkElems)
		if _, err := io.ReadFull(r, buf[:size*n]); err != nil {
			return err
		}
		for i := range n {
			dst[i] = decode(buf[size*i:])
		}
		dst = dst[n:]
	}
	return nil
}

// WriteCheckpoint writes a version 3 (float32) llm.c checkpoint.
func WriteCheckpoint(path string, cfg gpt2.Config, params []float32) error {
	return writeCheckpoint(path, cfg, params, VersionFP32)
}

// WriteCheckpointBF16 writes a version 5 (bfloat16) llm.c checkpoint, rounding every parameter
// to the nearest bfloat16 (ties to even).
func WriteCheckpointBF16(path string, cfg gpt2.Config, params []float32) error {
	return writeCheckpoint(path, cfg, params, VersionBF16)
}

func checkConfigInt32(cfg gpt2.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, v := range []int{cfg.MaxSeqLen, cfg.VocabSize, cfg.PaddedVocabSize, cfg.NumLayers, cfg.NumHeads, cfg.Channels} {
		if v > math.MaxInt32 {
			return fmt.Errorf("config %v: field %d does not fit the int32 header", cfg, v)
		}
	}
	return nil
}

func writeCheckpoint(path string, cfg gpt2.Config, params []float32, version int) error {
	if err := checkConfigInt32(cfg); err != nil {
		return fmt.Errorf("llmc: writing checkpoint %s: %w", path, err)
	}
	if len(params) != cfg.NumParams() {
		return fmt.Errorf("llmc: writing checkpoint %s: %d parameters given, config %v has %d", path, len(params), cfg, cfg.NumParams())
	}
	var h [headerInts]int32
	h[0], h[1] = CheckpointMagic, int32(version)
	h[2], h[3], h[4], h[5], h[6], h[7] = int32(cfg.MaxSeqLen), int32(cfg.VocabSize), int32(cfg.NumLayers), int32(cfg.NumHeads), int32(cfg.Channels), int32(cfg.PaddedVocabSize)
	return writeFile(path, "checkpoint", func(w *bufio.Writer) {
		writeInt32s(w, h[:])
		if version == VersionBF16 {
			writeBF16(w, params)
		} else {
			writeFloat32s(w, params)
		}
	})
}

// writeFile creates path, lets fill write through a buffer, and removes the file again if
// anything fails, so no half-written file is left behind under the target name.
func writeFile(path, what string, fill func(w *bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("llmc: writing %s: %w", what, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fill(w)
	// bufio.Writer keeps its first error and Flush reports it.
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("llmc: writing %s %s: %w", what, path, err)
	}
	return nil
}

func writeFloat32s(w *bufio.Writer, src []float32) {
	writeChunks(w, src, 4, func(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) })
}

func writeInt32s(w *bufio.Writer, src []int32) {
	writeChunks(w, src, 4, func(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) })
}

func writeBF16(w *bufio.Writer, src []float32) {
	writeChunks(w, src, 2, func(b []byte, v float32) { binary.LittleEndian.PutUint16(b, safetensors.Float32ToBF16(v)) })
}

// writeChunks writes src as values of size bytes each, encoded by encode, a bounded chunk at a
// time (readChunks' mirror); write errors surface when the caller flushes w.
func writeChunks[T any](w *bufio.Writer, src []T, size int, encode func([]byte, T)) {
	buf := make([]byte, size*chunkElems)
	for len(src) > 0 {
		n := min(len(src), chunkElems)
		for i, v := range src[:n] {
			encode(buf[size*i:], v)
		}
		w.Write(buf[:size*n])
		src = src[n:]
	}
}

// DebugState is llm.c's debug state: a batch, the logits and mean loss of a forward pass over
// it, and the gradients of the loss with respect to every parameter.
type DebugState struct {
	B, T   int
	X, Y   []int32   // inputs and targets, B*T each
	Logits []float32 // B*T*V (unpadded vocabulary)
	Loss   float32
	Grads  []float32 // NumParams, in llm.c order
}

// stateSize is the file size of a debug state for cfg with batch B, T; ok is false on overflow.
func stateSize(cfg gpt2.Config, B, T int) (int64, bool) {
	n, ok := numParams(cfg)
	if !ok || float64(B)*float64(T)*float64(cfg.VocabSize+2) > 1<<50 {
		return 0, false
	}
	bt := int64(B) * int64(T)
	return headerBytes + 8*bt + 4*bt*int64(cfg.VocabSize) + 4 + 4*n, true
}

// ReadDebugState reads an llm.c debug state written for the model cfg.
func ReadDebugState(path string, cfg gpt2.Config) (*DebugState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llmc: reading debug state %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llmc: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("llmc: %w", err)
	}
	h, err := readHeader(f, st.Size(), "debug state")
	if err != nil {
		return nil, err
	}
	errf := func(format string, a ...any) error {
		return fmt.Errorf("llmc: debug state %s: "+format, append([]any{path}, a...)...)
	}
	switch {
	case h[0] != StateMagic && h[0] == CheckpointMagic:
		return nil, errf("header magic %d is a model checkpoint's, not a debug state's (%d)", h[0], StateMagic)
	case h[0] != StateMagic:
		return nil, errf("header magic %d, want %d (not an llm.c debug state)", h[0], StateMagic)
	case h[1] != StateVersion:
		return nil, errf("header version %d unsupported (want %d)", h[1], StateVersion)
	case h[2] <= 0:
		return nil, errf("header field B (batch size) = %d must be positive", h[2])
	case h[3] <= 0:
		return nil, errf("header field T (sequence length) = %d must be positive", h[3])
	case int(h[3]) > cfg.MaxSeqLen:
		return nil, errf("header field T (sequence length) = %d exceeds the config's max_seq_len %d", h[3], cfg.MaxSeqLen)
	}
	B, T := int(h[2]), int(h[3])
	want, ok := stateSize(cfg, B, T)
	if !ok {
		return nil, errf("header B=%d T=%d with config %v implies an impossibly large file", B, T, cfg)
	}
	if err := checkSize("debug state", path, st.Size(), want, fmt.Sprintf("B=%d T=%d with config %v", B, T, cfg)); err != nil {
		return nil, fmt.Errorf("%w (does the state belong to this model?)", err)
	}
	s := &DebugState{B: B, T: T, X: make([]int32, B*T), Y: make([]int32, B*T),
		Logits: make([]float32, B*T*cfg.VocabSize), Grads: make([]float32, cfg.NumParams())}
	r := bufio.NewReaderSize(f, 1<<20)
	var loss [1]float32
	for _, step := range []struct {
		field string
		read  func() error
	}{
		{"x", func() error { return readInt32s(r, s.X) }},
		{"y", func() error { return readInt32s(r, s.Y) }},
		{"logits", func() error { return readFloat32s(r, s.Logits) }},
		{"loss", func() error { return readFloat32s(r, loss[:]) }},
		{"grads", func() error { return readFloat32s(r, s.Grads) }},
	} {
		if err := step.read(); err != nil {
			return nil, errf("reading %s: %v", step.field, err)
		}
	}
	s.Loss = loss[0]
	if err := checkTokens(s, cfg.VocabSize); err != nil {
		return nil, errf("%v", err)
	}
	return s, nil
}

func checkTokens(s *DebugState, V int) error {
	for _, f := range []struct {
		name string
		ids  []int32
	}{{"x", s.X}, {"y", s.Y}} {
		for i, id := range f.ids {
			if id < 0 || int(id) >= V {
				return fmt.Errorf("%s[%d] (batch %d, position %d) = %d is outside the vocabulary [0, %d)", f.name, i, i/s.T, i%s.T, id, V)
			}
		}
	}
	return nil
}

// WriteDebugState writes s as an llm.c debug state for the model cfg.
func WriteDebugState(path string, cfg gpt2.Config, s *DebugState) error {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("llmc: writing debug state %s: "+format, append([]any{path}, a...)...)
	}
	if err := checkConfigInt32(cfg); err != nil {
		return errf("%v", err)
	}
	if s == nil {
		return errf("nil state")
	}
	if s.B <= 0 || s.T <= 0 || s.B > math.MaxInt32 || s.T > math.MaxInt32 {
		return errf("B=%d T=%d must be positive int32s", s.B, s.T)
	}
	if s.T > cfg.MaxSeqLen {
		return errf("T=%d exceeds the config's max_seq_len %d", s.T, cfg.MaxSeqLen)
	}
	bt := s.B * s.T
	for _, c := range []struct {
		field     string
		got, want int
	}{
		{"X", len(s.X), bt}, {"Y", len(s.Y), bt}, {"Logits", len(s.Logits), bt * cfg.VocabSize}, {"Grads", len(s.Grads), cfg.NumParams()},
	} {
		if c.got != c.want {
			return errf("%s has %d values, want %d for B=%d T=%d and config %v", c.field, c.got, c.want, s.B, s.T, cfg)
		}
	}
	if err := checkTokens(s, cfg.VocabSize); err != nil {
		return errf("%v", err)
	}
	var h [headerInts]int32
	h[0], h[1], h[2], h[3] = StateMagic, StateVersion, int32(s.B), int32(s.T)
	return writeFile(path, "debug state", func(w *bufio.Writer) {
		writeInt32s(w, h[:])
		writeInt32s(w, s.X)
		writeInt32s(w, s.Y)
		writeFloat32s(w, s.Logits)
		writeFloat32s(w, []float32{s.Loss})
		writeFloat32s(w, s.Grads)
	})
}
