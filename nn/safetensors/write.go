package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// Tensor is one tensor to write. DType picks the stored type and the data field it reads:
// F32 and BF16 (rounded to nearest even) store F32Data, or when that is nil what F32Fill
// produces; I32 stores I32Data and I64 stores I64Data.
type Tensor struct {
	Name    string
	DType   DType
	Shape   []int
	F32Data []float32
	// F32Fill, used instead of F32Data, fills dst with elements [start, start+len(dst)), so a
	// tensor that exists only as a view of other data (a transpose, say) is written without
	// materialising it.
	F32Fill func(start int, dst []float32)
	I32Data []int32
	I64Data []int64
}

// NewF32 is a float32 tensor stored as F32.
func NewF32(name string, shape []int, data []float32) Tensor {
	return Tensor{Name: name, DType: F32, Shape: shape, F32Data: data}
}

func (t Tensor) dataLen(numel int) (int, error) {
	switch t.DType {
	case F32, BF16:
		if t.F32Fill != nil {
			if t.F32Data != nil {
				return 0, fmt.Errorf("tensor %q: both F32Data and F32Fill given", t.Name)
			}
			return numel, nil
		}
		return len(t.F32Data), nil
	case I32:
		return len(t.I32Data), nil
	case I64:
		return len(t.I64Data), nil
	}
	return 0, fmt.Errorf("tensor %q: cannot write dtype %q (writable: F32, BF16, I32, I64)", t.Name, t.DType)
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Write writes the tensors, in the given order, and the optional metadata map to w.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	js, err := header(tensors, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	bw.Write(lenBuf[:])
	bw.Write(js)
	enc := encoder{w: bw, buf: make([]byte, 0, 1<<16)}
	for _, t := range tensors {
		enc.tensor(t)
	}
	enc.flush()
	// bufio.Writer keeps the first error; Flush reports it.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: writing: %w", err)
	}
	return nil
}

// header checks the tensors and encodes the JSON header that lays them out one after
// another, padded with spaces so the data starts 8-byte aligned as the reference writer does.
func header(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	hdr := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		hdr[metaKey] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == metaKey {
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := hdr[t.Name]; dup {
			return nil, fmt.Errorf("safetensors: tensor %q given twice", t.Name)
		}
		e, err := t.headerEntry(off)
		if err != nil {
			return nil, err
		}
		hdr[t.Name] = e
		off = e.DataOffsets[1]
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("safetensors: encoding header: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	return js, nil
}

// headerEntry describes t stored from byte off of the data, checking its shape matches its
// values.
func (t Tensor) headerEntry(off int64) (headerEntry, error) {
	numel := 1
	for _, d := range t.Shape {
		if d < 0 {
			return headerEntry{}, fmt.Errorf("safetensors: tensor %q: shape %v has a negative dimension", t.Name, t.Shape)
		}
		numel *= d
	}
	n, err := t.dataLen(numel)
	if err != nil {
		return headerEntry{}, fmt.Errorf("safetensors: %w", err)
	}
	if numel != n {
		return headerEntry{}, fmt.Errorf("safetensors: tensor %q: shape %v has %d elements but %d values were given", t.Name, t.Shape, numel, n)
	}
	shape := t.Shape
	if shape == nil {
		shape = []int{}
	}
	size := int64(n) * int64(t.DType.Size())
	return headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + size}}, nil
}

// tensor encodes t's values.
func (e *encoder) tensor(t Tensor) {
	switch {
	case t.F32Fill != nil:
		e.filled(t)
	case t.DType == F32 || t.DType == BF16:
		e.floats(t.DType, t.F32Data)
	case t.DType == I32:
		for _, v := range t.I32Data {
			e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(v))
			e.maybeFlush()
		}
	case t.DType == I64:
		for _, v := range t.I64Data {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(v))
			e.maybeFlush()
		}
	}
}

// filled produces t through F32Fill a chunk at a time, each chunk encoded before the next is
// made, so no copy of the whole tensor exists.
func (e *encoder) filled(t Tensor) {
	if e.fillBuf == nil {
		e.fillBuf = make([]float32, 1<<14)
	}
	numel := 1
	for _, d := range t.Shape {
		numel *= d
	}
	for start := 0; start < numel; start += len(e.fillBuf) {
		part := e.fillBuf[:min(len(e.fillBuf), numel-start)]
		t.F32Fill(start, part)
		e.floats(t.DType, part)
	}
}

// encoder batches element encodings into one buffer rather than calling Write per element.
type encoder struct {
	w       *bufio.Writer
	buf     []byte
	fillBuf []float32 // chunk buffer for F32Fill tensors
}

func (e *encoder) flush() {
	e.w.Write(e.buf)
	e.buf = e.buf[:0]
}

// maybeFlush flushes when another element of up to 8 bytes might not fit.
func (e *encoder) maybeFlush() {
	if len(e.buf) > cap(e.buf)-8 {
		e.flush()
	}
}

func (e *encoder) floats(dt DType, data []float32) {
	for _, v := range data {
		if dt == BF16 {
			e.buf = binary.LittleEndian.AppendUint16(e.buf, Float32ToBF16(v))
		} else {
			e.buf = binary.LittleEndian.AppendUint32(e.buf, math.Float32bits(v))
		}
		e.maybeFlush()
	}
}

// WriteFile writes a safetensors file at path (not atomically; see nn/checkpoint for that).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := Write(f, tensors, metadata); err != nil {
		f.Close()
		return fmt.Errorf("%w (file %s)", err, path)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
