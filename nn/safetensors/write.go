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
// F32 and BF16 (rounded to nearest even) store F32Data, I32 stores I32Data, I64 stores I64Data.
type Tensor struct {
	Name    string
	DType   DType
	Shape   []int
	F32Data []float32
	I32Data []int32
	I64Data []int64
}

// NewF32 is a float32 tensor stored as F32.
func NewF32(name string, shape []int, data []float32) Tensor {
	return Tensor{Name: name, DType: F32, Shape: shape, F32Data: data}
}

func (t Tensor) dataLen() (int, error) {
	switch t.DType {
	case F32, BF16:
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
	hdr := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		hdr[metaKey] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == metaKey {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := hdr[t.Name]; dup {
			return fmt.Errorf("safetensors: tensor %q given twice", t.Name)
		}
		n, err := t.dataLen()
		if err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
		numel := 1
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: shape %v has a negative dimension", t.Name, t.Shape)
			}
			numel *= d
		}
		if numel != n {
			return fmt.Errorf("safetensors: tensor %q: shape %v has %d elements but %d values were given", t.Name, t.Shape, numel, n)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		size := int64(n) * int64(t.DType.Size())
		hdr[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + size}}
		off += size
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: encoding header: %w", err)
	}
	// Pad the header with spaces so the data starts 8-byte aligned, as the reference writer does.
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	bw.Write(lenBuf[:])
	bw.Write(js)
	// Encode into a scratch chunk rather than calling Write per element.
	scratch := make([]byte, 0, 1<<16)
	flush := func() {
		bw.Write(scratch)
		scratch = scratch[:0]
	}
	for _, t := range tensors {
		switch t.DType {
		case F32:
			for _, v := range t.F32Data {
				scratch = binary.LittleEndian.AppendUint32(scratch, math.Float32bits(v))
				if len(scratch) > cap(scratch)-8 {
					flush()
				}
			}
		case BF16:
			for _, v := range t.F32Data {
				scratch = binary.LittleEndian.AppendUint16(scratch, Float32ToBF16(v))
				if len(scratch) > cap(scratch)-8 {
					flush()
				}
			}
		case I32:
			for _, v := range t.I32Data {
				scratch = binary.LittleEndian.AppendUint32(scratch, uint32(v))
				if len(scratch) > cap(scratch)-8 {
					flush()
				}
			}
		case I64:
			for _, v := range t.I64Data {
				scratch = binary.LittleEndian.AppendUint64(scratch, uint64(v))
				if len(scratch) > cap(scratch)-8 {
					flush()
				}
			}
		}
	}
	flush()
	// bufio.Writer keeps the first error; Flush reports it.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: writing: %w", err)
	}
	return nil
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
