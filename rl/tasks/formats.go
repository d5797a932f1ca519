package tasks

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// The dataset layouts read: JSON Lines, a JSON array of objects, and Parquet (the form the
// Hugging Face Hub publishes datasets in).
const (
	formatJSONL = iota
	formatJSONArray
	formatParquet
)

// Size bounds that keep a hostile or mistaken file from taking all memory: a JSONL line or
// array element, a JSON array file as a whole, and a Parquet column chunk once decompressed.
const (
	maxRecordBytes      = 64 << 20
	maxJSONArrayBytes   = 2 << 30
	maxParquetChunkSize = 1 << 30
)

// parquetMagic opens and closes every Parquet file.
var parquetMagic = []byte("PAR1")

// record is one example of a dataset file: a JSON object by field name, and where it is
// ("file:line", or "file: row N" in a Parquet file).
type record struct {
	where string
	obj   map[string]json.RawMessage
}

// datasetFormat tells the layout of a dataset file from its first bytes, and checks a file
// named .parquet is one.
func datasetFormat(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	head = head[:n]
	isParquet := bytes.HasPrefix(head, parquetMagic)
	if strings.EqualFold(filepath.Ext(path), ".parquet") && !isParquet {
		return 0, fmt.Errorf("%s: named .parquet but does not start with Parquet's %q mark (a truncated download?)", path, parquetMagic)
	}
	if isParquet {
		return formatParquet, nil
	}
	first := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(first) > 0 && first[0] == '[' {
		return formatJSONArray, nil
	}
	return formatJSONL, nil
}

// readRecords reads every example of a dataset file in whichever layout it has.
func readRecords(path string, fn func(record) error) error {
	format, err := datasetFormat(path)
	if err != nil {
		return err
	}
	switch format {
	case formatParquet:
		return scanParquet(path, fn)
	case formatJSONArray:
		return scanJSONArray(path, fn)
	}
	return scanLines(path, maxRecordBytes, func(line int, b []byte) error {
		obj, err := jsonObject(b)
		if err != nil {
			return err
		}
		return fn(record{where: fmt.Sprintf("%s:%d", path, line), obj: obj})
	})
}

func jsonObject(b []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return obj, nil
}

// scanJSONArray reads a file holding one JSON array of objects; each element is named by the
// line it starts on.
func scanJSONArray(path string, fn func(record) error) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if st.Size() > maxJSONArrayBytes {
		return fmt.Errorf("%s: a JSON array of %d bytes is more than the %d read at once; write it as JSON Lines (one object a line) or Parquet", path, st.Size(), maxJSONArrayBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		at := invalidUTF8At(data)
		return fmt.Errorf("%s:%d: not valid UTF-8 (byte %d of the file); save the file as UTF-8", path, 1+bytes.Count(data[:at], []byte("\n")), at+1)
	}
	lines := lineCounter{data: data, line: 1}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening bracket
		return fmt.Errorf("%s: %w", path, err)
	}
	for dec.More() {
		start := lines.at(nextValue(data, dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s:%d: %w", path, start, err)
		}
		if len(raw) > maxRecordBytes {
			return fmt.Errorf("%s:%d: an element of %d bytes, more than %d", path, start, len(raw), maxRecordBytes)
		}
		obj, err := jsonObject(raw)
		if err == nil {
			err = fn(record{where: fmt.Sprintf("%s:%d", path, start), obj: obj})
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, start, err)
		}
	}
	end := lines.at(nextValue(data, dec.InputOffset()))
	if _, err := dec.Token(); err != nil { // the closing bracket
		return fmt.Errorf("%s:%d: %w", path, end, err)
	}
	if rest := nextValue(data, dec.InputOffset()); rest < len(data) {
		return fmt.Errorf("%s:%d: text after the JSON array", path, lines.at(rest))
	}
	return nil
}

// nextValue is the offset of the first byte from off that is neither JSON whitespace nor the
// comma between array elements.
func nextValue(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && bytes.IndexByte([]byte(" \t\r\n,"), data[i]) >= 0 {
		i++
	}
	return i
}

// lineCounter finds the line of increasing byte offsets, counting each newline once.
type lineCounter struct {
	data      []byte
	pos, line int
}

func (c *lineCounter) at(off int) int {
	off = min(max(off, c.pos), len(c.data))
	c.line += bytes.Count(c.data[c.pos:off], []byte("\n"))
	c.pos = off
	return c.line
}

// scanParquet reads a Parquet file row by row, each row as the JSON object a JSONL line with
// the same values would be: strings, numbers and booleans as they are, lists as arrays, structs
// (a conversation's {role, content} messages, nested metadata) as objects. Rows are named from
// 0, as datasets and pandas index them. A file whose footer asks for more than
// maxParquetChunkSize per column chunk is refused before any page is read, and a malformed one
// is an error, never a crash.
func scanParquet(path string, fn func(record) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	row := -1
	defer func() { // the decoder panics on some malformed pages
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: row %d: not a readable Parquet file: %v", path, max(row, 0), r)
		}
	}()
	if err := checkParquetFooter(f, st.Size()); err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	if err := checkParquetSizes(pf, st.Size()); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	for row = 0; ; row++ {
		values := map[string]any{}
		if err := r.Read(&values); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: row %d: %w", path, row, err)
		}
		where := fmt.Sprintf("%s: row %d", path, row)
		obj, err := parquetObject(values)
		if err == nil {
			err = fn(record{where: where, obj: obj})
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
}

// checkParquetFooter checks the file ends with Parquet's mark after a footer length that fits
// in the file: the decoder allocates whatever length is written there before reading it.
func checkParquetFooter(f io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%d bytes, too short for a Parquet file", size)
	}
	var tail [8]byte
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if !bytes.Equal(tail[4:], parquetMagic) {
		return fmt.Errorf("does not end with Parquet's %q mark (a truncated download?)", parquetMagic)
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("a footer of %d bytes in a file of %d (a damaged file?)", n, size)
	}
	return nil
}

// checkParquetSizes refuses a footer whose column chunks claim more bytes than the file holds
// (compressed) or than maxParquetChunkSize (decompressed).
func checkParquetSizes(pf *parquet.File, fileSize int64) error {
	for i, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			m := c.MetaData
			name := strings.Join(m.PathInSchema, ".")
			if m.TotalCompressedSize < 0 || m.TotalCompressedSize > fileSize {
				return fmt.Errorf("row group %d, column %q: %d compressed bytes in a file of %d (a damaged file?)", i, name, m.TotalCompressedSize, fileSize)
			}
			if m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxParquetChunkSize {
				return fmt.Errorf("row group %d, column %q: %d bytes decompressed, more than the %d read at once; write the file with smaller row groups", i, name, m.TotalUncompressedSize, maxParquetChunkSize)
			}
		}
	}
	return nil
}

// parquetObject turns a row as parquet-go reads it into JSON values by column name, refusing
// text that is not UTF-8 (JSON would replace its bytes with U+FFFD unseen).
func parquetObject(values map[string]any) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	obj := make(map[string]json.RawMessage, len(values))
	for _, k := range keys {
		v, err := jsonValue(values[k])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", k, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", k, err)
		}
		if len(b) > maxRecordBytes {
			return nil, fmt.Errorf("column %q: a value of %d bytes, more than %d", k, len(b), maxRecordBytes)
		}
		obj[k] = b
	}
	return obj, nil
}

// jsonValue checks the text in v is UTF-8 and gives binary columns holding UTF-8 as text (a
// Parquet writer may leave text unannotated).
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("not valid UTF-8 (byte %d)", invalidUTF8At([]byte(v))+1)
		}
	case []byte:
		if utf8.Valid(v) {
			return string(v), nil
		}
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = jsonValue(e); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = jsonValue(e); err != nil {
				return nil, fmt.Errorf("field %q: %w", k, err)
			}
		}
	}
	return v, nil
}

// canonicalJSON writes a JSON value compactly with object keys sorted, numbers as written, so
// metadata is the same text whichever layout the value came from.
func canonicalJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// rowJSON writes a row as one compact JSON object, keys sorted at every level, numbers as
// written and text unescaped (an environment reads it as the row it was).
func rowJSON(obj map[string]json.RawMessage) (json.RawMessage, error) {
	vals := make(map[string]any, len(obj))
	for k, raw := range obj {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		vals[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(vals); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
