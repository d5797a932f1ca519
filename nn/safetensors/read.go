// Package safetensors reads and writes safetensors files, Hugging Face's format for weights.
//
// A file is an 8-byte little-endian header length, a JSON header mapping tensor names to
// {dtype, shape, data_offsets} (plus an optional "__metadata__" string map), then the raw
// little-endian tensor data.
//
// [Open] returns a [File] that reads tensor by tensor with ReadAt, so a caller can convert a
// 500 MB model straight into its own buffer ([File.ReadFloat32]) without holding a second copy
// of the file; F32, F16 and BF16 tensors convert to float32. [Write] and [WriteFile] write a
// list of [Tensor] values, in F32, BF16, I32 or I64, with metadata.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
	"strings"
	"unsafe"

	"github.com/vkgrad/vkgrad/internal/modelfile"
)

// DType is a safetensors element type, spelled as in the header.
type DType string

// The element types the format defines. All of them can be listed and read raw; F32, F16 and
// BF16 convert to float32, I32 and I64 read as integers.
const (
	F64     DType = "F64"
	F32     DType = "F32"
	F16     DType = "F16"
	BF16    DType = "BF16"
	I64     DType = "I64"
	I32     DType = "I32"
	I16     DType = "I16"
	I8      DType = "I8"
	U64     DType = "U64"
	U32     DType = "U32"
	U16     DType = "U16"
	U8      DType = "U8"
	Bool    DType = "BOOL"
	F8E4M3  DType = "F8_E4M3"
	F8E5M2  DType = "F8_E5M2"
	metaKey       = "__metadata__"
	// maxHeader bounds the JSON header, as the reference implementation does, so a corrupt
	// length cannot make us allocate gigabytes.
	maxHeader = 100 << 20
)

// Size is the number of bytes of one element.
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16, I16, U16:
		return 2
	case I8, U8, Bool, F8E4M3, F8E5M2:
		return 1
	}
	return 0
}

// TensorInfo describes one tensor of a file. Begin and End are byte offsets into the data
// section (which starts after the header).
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Numel is the number of elements.
func (t TensorInfo) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open safetensors file. Its methods are safe for concurrent use (they only ReadAt).
type File struct {
	path      string
	f         *os.File
	dataStart int64
	tensors   map[string]TensorInfo
	names     []string
	metadata  map[string]string
}

// Open reads and validates the header of a safetensors file: every dtype known, every shape
// consistent with its byte range, and the byte ranges tiling the data section exactly (no
// overlaps, gaps or trailing bytes), as the reference implementation requires.
func Open(path string) (*File, error) {
	// Opening a named pipe would block, and a device has no size to check the header against.
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if err := modelfile.Check(path, st, -1); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	sf, err := parse(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return sf, nil
}

// parse reads and checks the header of the open file f.
func parse(f *os.File, path string) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if err := modelfile.Check(path, st, -1); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	size := st.Size()
	errf := func(format string, a ...any) error {
		return fmt.Errorf("safetensors: file %s: "+format, append([]any{path}, a...)...)
	}
	hdr, err := readHeader(f, size, errf)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, errf("header JSON: %v", err)
	}
	if dup := duplicateKey(hdr); dup != "" {
		return nil, errf("header names %q twice (which entry is meant is ambiguous)", dup)
	}
	sf := &File{path: path, f: f, dataStart: 8 + int64(len(hdr)), tensors: make(map[string]TensorInfo, len(raw))}
	dataLen := size - sf.dataStart
	for name, msg := range raw {
		if name == metaKey {
			if err := json.Unmarshal(msg, &sf.metadata); err != nil {
				return nil, errf("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		info, err := decodeEntry(name, msg, dataLen, errf)
		if err != nil {
			return nil, err
		}
		sf.tensors[name] = info
		sf.names = append(sf.names, name)
	}
	sort.Strings(sf.names)
	if err := checkTiling(sf, dataLen); err != nil {
		return nil, errf("%v", err)
	}
	return sf, nil
}

// readHeader reads the header length and the JSON header after it, checking both fit in a
// file of size bytes.
func readHeader(f *os.File, size int64, errf func(string, ...any) error) ([]byte, error) {
	if size < 8 {
		return nil, errf("truncated: %d bytes, need at least 8 for the header length", size)
	}
	var lenBuf [8]byte
	if _, err := f.ReadAt(lenBuf[:], 0); err != nil {
		return nil, errf("reading header length: %v", err)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	switch {
	case hlen == 0:
		return nil, errf("header length is 0")
	case hlen > maxHeader:
		return nil, errf("header length %d exceeds the %d-byte limit (corrupt file?)", hlen, maxHeader)
	case int64(hlen) > size-8:
		return nil, errf("truncated: header length %d needs %d bytes, file has %d", hlen, 8+hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := f.ReadAt(hdr, 8); err != nil {
		return nil, errf("reading header: %v", err)
	}
	if hdr[0] != '{' {
		return nil, errf("header does not start with '{' (not a safetensors file?)")
	}
	return hdr, nil
}

// decodeEntry decodes and checks the header entry of tensor name, refusing unknown fields.
func decodeEntry(name string, msg json.RawMessage, dataLen int64, errf func(string, ...any) error) (TensorInfo, error) {
	var e struct {
		DType       string  `json:"dtype"`
		Shape       []int64 `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	dec := json.NewDecoder(strings.NewReader(string(msg)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return TensorInfo{}, errf("tensor %q: header entry: %v", name, err)
	}
	info, err := checkEntry(name, DType(e.DType), e.Shape, e.DataOffsets, dataLen)
	if err != nil {
		return TensorInfo{}, errf("%v", err)
	}
	return info, nil
}

func checkEntry(name string, dt DType, shape, offs []int64, dataLen int64) (TensorInfo, error) {
	info := TensorInfo{Name: name, DType: dt}
	if dt.Size() == 0 {
		return info, fmt.Errorf("tensor %q: unknown dtype %q", name, dt)
	}
	if len(offs) != 2 {
		return info, fmt.Errorf("tensor %q: data_offsets has %d values, want 2", name, len(offs))
	}
	if offs[0] < 0 || offs[1] < offs[0] {
		return info, fmt.Errorf("tensor %q: data_offsets [%d, %d] are not an increasing non-negative range", name, offs[0], offs[1])
	}
	// Compute the byte size with overflow checks: a corrupt shape must not wrap around to
	// something that happens to match.
	nbytes := uint64(dt.Size())
	info.Shape = make([]int, len(shape))
	for i, d := range shape {
		if d < 0 {
			return info, fmt.Errorf("tensor %q: shape %v has a negative dimension", name, shape)
		}
		hi, lo := bits.Mul64(nbytes, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return info, fmt.Errorf("tensor %q: shape %v is too large", name, shape)
		}
		nbytes = lo
		info.Shape[i] = int(d)
	}
	if got := uint64(offs[1] - offs[0]); got != nbytes {
		return info, fmt.Errorf("tensor %q: dtype %s shape %v needs %d bytes but data_offsets [%d, %d] span %d", name, dt, shape, nbytes, offs[0], offs[1], got)
	}
	if offs[1] > dataLen {
		return info, fmt.Errorf("truncated: tensor %q ends at data byte %d but the data section has %d bytes", name, offs[1], dataLen)
	}
	info.Begin, info.End = offs[0], offs[1]
	return info, nil
}

func checkTiling(sf *File, dataLen int64) error {
	order := make([]TensorInfo, 0, len(sf.tensors))
	for _, t := range sf.tensors {
		order = append(order, t)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Begin != order[j].Begin {
			return order[i].Begin < order[j].Begin
		}
		if order[i].End != order[j].End {
			return order[i].End < order[j].End
		}
		return order[i].Name < order[j].Name
	})
	var pos int64
	prev := ""
	for _, t := range order {
		switch {
		case t.Begin < pos:
			return fmt.Errorf("tensor %q (bytes %d-%d) overlaps tensor %q (ends at %d)", t.Name, t.Begin, t.End, prev, pos)
		case t.Begin > pos:
			return fmt.Errorf("gap in the data section: bytes %d-%d before tensor %q belong to no tensor", pos, t.Begin, t.Name)
		}
		pos, prev = t.End, t.Name
	}
	if pos != dataLen {
		return fmt.Errorf("%d trailing bytes after the last tensor (data section has %d bytes, tensors cover %d)", dataLen-pos, dataLen, pos)
	}
	return nil
}

// Close closes the underlying file.
func (sf *File) Close() error { return sf.f.Close() }

// Path is the file's path as given to Open.
func (sf *File) Path() string { return sf.path }

// Names lists the tensor names in sorted order.
func (sf *File) Names() []string { return append([]string(nil), sf.names...) }

// Metadata returns the "__metadata__" map (nil when absent). The map is shared; do not modify.
func (sf *File) Metadata() map[string]string { return sf.metadata }

// Info describes a tensor; ok is false when the file has no tensor of that name.
func (sf *File) Info(name string) (TensorInfo, bool) {
	t, ok := sf.tensors[name]
	return t, ok
}

func (sf *File) lookup(name string) (TensorInfo, error) {
	t, ok := sf.tensors[name]
	if !ok {
		return t, fmt.Errorf("safetensors: file %s: no tensor %q", sf.path, name)
	}
	return t, nil
}

// Raw returns a tensor's bytes as stored.
func (sf *File) Raw(name string) ([]byte, error) {
	t, err := sf.lookup(name)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, t.End-t.Begin)
	if err := sf.readAt(t, buf, t.Begin); err != nil {
		return nil, err
	}
	return buf, nil
}

func (sf *File) readAt(t TensorInfo, buf []byte, off int64) error {
	if _, err := sf.f.ReadAt(buf, sf.dataStart+off); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("safetensors: file %s: tensor %q: truncated (file shrank after open?)", sf.path, t.Name)
		}
		return fmt.Errorf("safetensors: file %s: tensor %q: %w", sf.path, t.Name, err)
	}
	return nil
}

// littleEndian reports whether this machine stores numbers as the format does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// chunk is the read granularity of the converting readers: big enough for throughput, small
// enough that no second copy of a large tensor is ever held.
const chunk = 1 << 20

// stream reads the tensor's bytes chunk by chunk, handing each chunk (a whole number of
// elements) and the index of its first element to fn.
func (sf *File) stream(t TensorInfo, fn func(b []byte, first int)) error {
	es := t.DType.Size()
	n := t.End - t.Begin
	buf := make([]byte, min(int64(chunk/es*es), n))
	for off := int64(0); off < n; {
		b := buf[:min(int64(len(buf)), n-off)]
		if err := sf.readAt(t, b, t.Begin+off); err != nil {
			return err
		}
		fn(b, int(off)/es)
		off += int64(len(b))
	}
	return nil
}

// Float32 reads a floating-point tensor (F32, F16 or BF16) as float32.
func (sf *File) Float32(name string) ([]float32, error) {
	t, err := sf.lookup(name)
	if err != nil {
		return nil, err
	}
	dst := make([]float32, t.Numel())
	if err := sf.ReadFloat32(name, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// ReadFloat32 reads a floating-point tensor (F32, F16 or BF16) into dst, which must have
// exactly as many elements as the tensor.
func (sf *File) ReadFloat32(name string, dst []float32) error {
	t, err := sf.lookup(name)
	if err != nil {
		return err
	}
	if len(dst) != t.Numel() {
		return fmt.Errorf("safetensors: file %s: tensor %q has %d elements (shape %v), destination has %d", sf.path, name, t.Numel(), t.Shape, len(dst))
	}
	var conv func(b []byte, out []float32)
	switch t.DType {
	case F32:
		if littleEndian && len(dst) > 0 {
			// The stored bytes are the in-memory representation: read straight into dst.
			return sf.readAt(t, unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), t.Begin)
		}
		conv = func(b []byte, out []float32) {
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
	case BF16:
		conv = func(b []byte, out []float32) {
			for i := range out {
				out[i] = BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
			}
		}
	case F16:
		conv = func(b []byte, out []float32) {
			for i := range out {
				out[i] = F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
			}
		}
	default:
		return fmt.Errorf("safetensors: file %s: tensor %q has dtype %s, want F32, F16 or BF16", sf.path, name, t.DType)
	}
	es := t.DType.Size()
	return sf.stream(t, func(b []byte, first int) { conv(b, dst[first:first+len(b)/es]) })
}

// Int32 reads an I32 tensor.
func (sf *File) Int32(name string) ([]int32, error) {
	t, err := sf.lookup(name)
	if err != nil {
		return nil, err
	}
	if t.DType != I32 {
		return nil, fmt.Errorf("safetensors: file %s: tensor %q has dtype %s, want I32", sf.path, name, t.DType)
	}
	dst := make([]int32, t.Numel())
	err = sf.stream(t, func(b []byte, first int) {
		for i := 0; i < len(b)/4; i++ {
			dst[first+i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
		}
	})
	return dst, err
}

// Int64 reads an I64 tensor.
func (sf *File) Int64(name string) ([]int64, error) {
	t, err := sf.lookup(name)
	if err != nil {
		return nil, err
	}
	if t.DType != I64 {
		return nil, fmt.Errorf("safetensors: file %s: tensor %q has dtype %s, want I64", sf.path, name, t.DType)
	}
	dst := make([]int64, t.Numel())
	err = sf.stream(t, func(b []byte, first int) {
		for i := 0; i < len(b)/8; i++ {
			dst[first+i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	})
	return dst, err
}

// duplicateKey returns a key the header object holds twice, or "": encoding/json would keep the
// last silently. The header already parsed, so the token stream is well formed.
func duplicateKey(hdr []byte) string {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if _, err := dec.Token(); err != nil { // {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := tok.(string)
		if seen[key] {
			return key
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}
