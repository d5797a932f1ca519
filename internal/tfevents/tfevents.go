// Package tfevents writes and reads TensorBoard scalar event files without TensorFlow or protobuf.
//
// A [Writer], started by [Create], appends [Scalar] values by step; [ReadFile] reads a file back
// as [Event] values. Records use TFRecord framing (length, masked CRC-32C, data, masked CRC-32C)
// around Event and Summary protocol buffer messages that the package encodes and decodes by
// hand ([ReadRecords], [DecodeEvent]).
package tfevents

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Scalar is one named value at a step.
type Scalar struct {
	Tag   string
	Value float64
}

// Writer appends events to one event file.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	path string
	buf  []byte
}

// Create starts a new event file in dir, named as TensorBoard expects
// (events.out.tfevents.<seconds>.<host>.<pid>), with its file-version record.
func Create(dir string, now time.Time) (*Writer, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	base := filepath.Join(dir, fmt.Sprintf("events.out.tfevents.%d.%s.%d", now.Unix(), host, os.Getpid()))
	path := base
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	for n := 1; errors.Is(err, os.ErrExist) && n < 1000; n++ { // several files in one second
		path = fmt.Sprintf("%s.%d", base, n)
		f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("tfevents: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriter(f), path: path}
	if err := w.record(encodeEvent(nil, Event{WallTime: seconds(now), FileVersion: "brain.Event:2"})); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Scalars writes one event holding every value of step. Non-finite values are written as
// they are: TensorBoard shows them as gaps.
func (w *Writer) Scalars(step int64, now time.Time, values []Scalar) error {
	w.buf = encodeEvent(w.buf[:0], Event{WallTime: seconds(now), Step: step, Scalars: values})
	return w.record(w.buf)
}

// Sync flushes buffered records and syncs the file to disk.
func (w *Writer) Sync() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tfevents: writing %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("tfevents: syncing %s: %w", w.path, err)
	}
	return nil
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	err := w.Sync()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tfevents: closing %s: %w", w.path, cerr)
	}
	return err
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's checksum: CRC-32C rotated right by 15 bits plus a constant, so that
// a CRC computed over data holding CRCs stays well distributed.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// record writes one TFRecord: uint64 length, masked CRC of the length, data, masked CRC of the data.
func (w *Writer) record(data []byte) error {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], maskedCRC(data))
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.w.Write(b); err != nil {
			return fmt.Errorf("tfevents: writing %s: %w", w.path, err)
		}
	}
	return nil
}

// ReadRecords returns the data of every record in r, checking both checksums of each.
func ReadRecords(r io.Reader) ([][]byte, error) {
	br := bufio.NewReader(r)
	var out [][]byte
	for i := 0; ; i++ {
		var head [12]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, fmt.Errorf("tfevents: record %d: truncated header", i)
		}
		if maskedCRC(head[:8]) != binary.LittleEndian.Uint32(head[8:]) {
			return out, fmt.Errorf("tfevents: record %d: length checksum mismatch", i)
		}
		n := binary.LittleEndian.Uint64(head[:8])
		if n > 1<<26 {
			return out, fmt.Errorf("tfevents: record %d: length %d is implausible", i, n)
		}
		data := make([]byte, n+4)
		if _, err := io.ReadFull(br, data); err != nil {
			return out, fmt.Errorf("tfevents: record %d: truncated data", i)
		}
		if maskedCRC(data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
			return out, fmt.Errorf("tfevents: record %d: data checksum mismatch", i)
		}
		out = append(out, data[:n])
	}
}

// ReadFile decodes every event of an event file.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tfevents: %w", err)
	}
	defer f.Close()
	recs, err := ReadRecords(f)
	if err != nil {
		return nil, fmt.Errorf("%w in %s", err, path)
	}
	events := make([]Event, len(recs))
	for i, r := range recs {
		if events[i], err = DecodeEvent(r); err != nil {
			return nil, fmt.Errorf("tfevents: %s record %d: %w", path, i, err)
		}
	}
	return events, nil
}

var errTruncated = errors.New("truncated protocol buffer")

func f32(v float64) uint32 { return math.Float32bits(float32(v)) }
