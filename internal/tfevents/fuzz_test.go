package tfevents

import (
	"bytes"
	"testing"
)

// FuzzReadRecords: any bytes give records whose events decode or fail, never a panic.
func FuzzReadRecords(f *testing.F) {
	event := encodeEvent(nil, Event{WallTime: 1, Step: 2, Scalars: []Scalar{{"loss", 1}}})
	f.Add(event)
	f.Add(append(append([]byte{}, event...), event...))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := ReadRecords(bytes.NewReader(b))
		for _, r := range recs {
			DecodeEvent(r)
		}
		DecodeEvent(b)
	})
}
