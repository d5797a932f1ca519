package tfevents

import (
	"bytes"
	"encoding/hex"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCRC32CAndMask(t *testing.T) {
	// RFC 3720's CRC-32C check value for the ASCII digits.
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xE3069283 {
		t.Fatalf("CRC-32C(123456789) = %#x, want 0xe3069283", got)
	}
	m := maskedCRC([]byte("123456789"))
	unmasked := m - 0xa282ead8
	unmasked = unmasked>>17 | unmasked<<15
	if unmasked != 0xE3069283 {
		t.Fatalf("unmasking %#x gives %#x", m, unmasked)
	}
}

func TestEventEncodingFollowsTheWireFormat(t *testing.T) {
	// Written out from the protocol buffer encoding rules: field 1 fixed64 (key 0x09), field 2
	// varint (0x10), field 3 bytes (0x1a), field 5 bytes (0x2a); Value: tag (0x0a), simple_value
	// fixed32 (0x15).
	got := encodeEvent(nil, Event{WallTime: 1.5, Step: 300, Scalars: []Scalar{{"loss", 0.25}}})
	want := "09" + "000000000000f83f" + "10" + "ac02" + "2a" + "0d" + "0a" + "0b" + "0a" + "04" + hex.EncodeToString([]byte("loss")) + "15" + "0000803e"
	if hex.EncodeToString(got) != want {
		t.Fatalf("encoding\n got %x\nwant %s", got, want)
	}
	fv := encodeEvent(nil, Event{FileVersion: "brain.Event:2"})
	if want := "09" + "0000000000000000" + "1a0d" + hex.EncodeToString([]byte("brain.Event:2")); hex.EncodeToString(fv) != want {
		t.Fatalf("file version record\n got %x\nwant %s", fv, want)
	}
}

func TestWriteThenRead(t *testing.T) {
	dir := t.TempDir()
	start := time.Unix(1700000000, 0)
	w, err := Create(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(w.Path()), "events.out.tfevents.1700000000.") {
		t.Errorf("file name %s: TensorBoard looks for events.out.tfevents.<time>.<host>", w.Path())
	}
	for step := int64(1); step <= 3; step++ {
		if err := w.Scalars(step, start.Add(time.Duration(step)*time.Second), []Scalar{
			{"loss", 3.5 / float64(step)}, {"rewards/exact/mean", 0.1 * float64(step)}, {"kl", math.NaN()},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || events[0].FileVersion != "brain.Event:2" {
		t.Fatalf("got %d events, first %+v; want the file version and 3 steps", len(events), events[0])
	}
	for i, e := range events[1:] {
		step := int64(i + 1)
		if e.Step != step || e.WallTime != float64(1700000000+step) || len(e.Scalars) != 3 {
			t.Fatalf("event %d: %+v", i+1, e)
		}
		if e.Scalars[0].Tag != "loss" || e.Scalars[0].Value != float64(float32(3.5/float64(step))) {
			t.Errorf("step %d loss: %+v", step, e.Scalars[0])
		}
		if e.Scalars[1].Tag != "rewards/exact/mean" || !math.IsNaN(e.Scalars[2].Value) {
			t.Errorf("step %d: %+v", step, e.Scalars)
		}
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(7, time.Unix(2, 0), []Scalar{{"loss", 1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(w.Path())
	for _, at := range []int{3, 10, len(good) - 8, len(good) - 1} {
		bad := bytes.Clone(good)
		bad[at] ^= 0x40
		if _, err := ReadRecords(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "mismatch") && !strings.Contains(err.Error(), "implausible") {
			t.Errorf("byte %d flipped: %v, want a checksum error", at, err)
		}
	}
	if _, err := ReadRecords(bytes.NewReader(good[:len(good)-2])); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a torn last record: %v, want truncated", err)
	}
}
