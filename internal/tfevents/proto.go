package tfevents

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Event mirrors the fields of tensorflow.Event that scalar logging uses:
// wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5 (Summary),
// where Summary is repeated Value value = 1 and Value is tag = 1 (string), simple_value = 2 (float).
type Event struct {
	WallTime    float64
	Step        int64
	FileVersion string
	Scalars     []Scalar
}

// Protocol buffer wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field<<3|wire))
}

func appendBytes(b []byte, field int, data []byte) []byte {
	b = appendTag(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// encodeEvent appends e's encoding to b.
func encodeEvent(b []byte, e Event) []byte {
	b = appendTag(b, 1, wireFixed64)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.WallTime))
	if e.Step != 0 {
		b = appendTag(b, 2, wireVarint)
		b = binary.AppendUvarint(b, uint64(e.Step))
	}
	if e.FileVersion != "" {
		b = appendBytes(b, 3, []byte(e.FileVersion))
	}
	if len(e.Scalars) > 0 {
		var summary []byte
		for _, s := range e.Scalars {
			var v []byte
			v = appendBytes(v, 1, []byte(s.Tag))
			v = appendTag(v, 2, wireFixed32)
			v = binary.LittleEndian.AppendUint32(v, f32(s.Value))
			summary = appendBytes(summary, 1, v)
		}
		b = appendBytes(b, 5, summary)
	}
	return b
}

// field is one decoded protocol buffer field.
type field struct {
	num, wire int
	u         uint64 // varint, fixed32 and fixed64 values
	data      []byte // length-delimited values
}

// fields splits a message into its fields, skipping none.
func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errTruncated
		}
		b = b[n:]
		f := field{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case wireVarint:
			if f.u, n = binary.Uvarint(b); n <= 0 {
				return nil, errTruncated
			}
			b = b[n:]
		case wireFixed64:
			if len(b) < 8 {
				return nil, errTruncated
			}
			f.u, b = binary.LittleEndian.Uint64(b), b[8:]
		case wireFixed32:
			if len(b) < 4 {
				return nil, errTruncated
			}
			f.u, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return nil, errTruncated
			}
			f.data, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return nil, fmt.Errorf("field %d has wire type %d", f.num, f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// DecodeEvent reads the fields of Event from one record; other fields are ignored.
func DecodeEvent(b []byte) (Event, error) {
	fs, err := fields(b)
	if err != nil {
		return Event{}, err
	}
	var e Event
	for _, f := range fs {
		switch {
		case f.num == 1 && f.wire == wireFixed64:
			e.WallTime = math.Float64frombits(f.u)
		case f.num == 2 && f.wire == wireVarint:
			e.Step = int64(f.u)
		case f.num == 3 && f.wire == wireBytes:
			e.FileVersion = string(f.data)
		case f.num == 5 && f.wire == wireBytes:
			if e.Scalars, err = decodeSummary(f.data); err != nil {
				return Event{}, fmt.Errorf("summary: %w", err)
			}
		}
	}
	return e, nil
}

func decodeSummary(b []byte) ([]Scalar, error) {
	vals, err := fields(b)
	if err != nil {
		return nil, err
	}
	var out []Scalar
	for _, v := range vals {
		if v.num != 1 || v.wire != wireBytes {
			continue
		}
		fs, err := fields(v.data)
		if err != nil {
			return nil, err
		}
		var s Scalar
		for _, f := range fs {
			switch {
			case f.num == 1 && f.wire == wireBytes:
				s.Tag = string(f.data)
			case f.num == 2 && f.wire == wireFixed32:
				s.Value = float64(math.Float32frombits(uint32(f.u)))
			}
		}
		out = append(out, s)
	}
	return out, nil
}
