package data

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rawTokenFile builds a token file byte by byte, independently of WriteTokenFile.
func rawTokenFile(magic, version, ntok int32, toks []uint16) []byte {
	var buf bytes.Buffer
	hdr := make([]int32, 256)
	hdr[0], hdr[1], hdr[2] = magic, version, ntok
	binary.Write(&buf, binary.LittleEndian, hdr)
	binary.Write(&buf, binary.LittleEndian, toks)
	return buf.Bytes()
}

func TestTokenFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.bin")
	toks := []int32{50256, 0, 1, 15496, 995, 65535, 262}
	if err := WriteTokenFile(path, toks); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, toks) {
		t.Fatalf("read %v, wrote %v", got, toks)
	}
	raw, _ := os.ReadFile(path)
	want := rawTokenFile(20240520, 1, int32(len(toks)), []uint16{50256, 0, 1, 15496, 995, 65535, 262})
	if !bytes.Equal(raw, want) {
		t.Fatal("written bytes differ from the llm.c layout")
	}
	// No temporary files left behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries after writing, want 1", len(ents))
	}
	// Empty files are valid.
	if err := WriteTokenFile(path, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(path); err != nil || len(got) != 0 {
		t.Fatalf("empty file: %v %v", got, err)
	}
}

func TestReadTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	good := rawTokenFile(20240520, 1, 3, []uint16{1, 2, 3})
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"magic", rawTokenFile(20240326, 1, 3, []uint16{1, 2, 3}), "magic 20240326"},
		{"version", rawTokenFile(20240520, 3, 3, []uint16{1, 2, 3}), "version 3"},
		{"version 2 with 16-bit tokens", rawTokenFile(20240520, 2, 3, []uint16{1, 2, 3}), "truncated"},
		{"short-header", good[:100], "shorter than the 1024-byte header"},
		{"truncated", good[:len(good)-1], "truncated"},
		{"trailing", append(slices.Clone(good), 0, 0, 0), "3 trailing bytes"},
		{"negative", rawTokenFile(20240520, 1, -5, nil), "negative token count -5"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".bin")
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTokenFile(path)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q lacks the path or %q", c.name, err, c.want)
		}
	}
	missing := filepath.Join(dir, "missing.bin")
	if _, err := ReadTokenFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadTokenFile(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
}

// Tokens beyond 16 bits (a 152k vocabulary) are written as version 2 and read back; a 16-bit
// stream stays version 1, what llm.c reads.
func TestTokenFileVersion2(t *testing.T) {
	dir := t.TempDir()
	wide, narrow := filepath.Join(dir, "wide.bin"), filepath.Join(dir, "narrow.bin")
	toks := []int32{0, 65535, 65536, 151645, 1 << 30}
	if err := WriteTokenFile(wide, toks); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTokenFile(wide)
	if err != nil || !slices.Equal(got, toks) {
		t.Fatalf("read back %v, %v", got, err)
	}
	if err := WriteTokenFile(narrow, []int32{1, 65535}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]uint32{wide: 2, narrow: 1} {
		b, _ := os.ReadFile(path)
		if v := binary.LittleEndian.Uint32(b[4:]); v != want {
			t.Errorf("%s: version %d, want %d", filepath.Base(path), v, want)
		}
	}
}

func TestWriteTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.bin")
	for _, c := range []struct {
		toks []int32
		want string
	}{
		{[]int32{1, 2, -1}, "token -1 at position 2"},
	} {
		err := WriteTokenFile(path, c.toks)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("WriteTokenFile(%v) error %v, want %q and the path", c.toks, err, c.want)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a failed write left a file")
	}
	if err := WriteTokenFile(filepath.Join(dir, "no", "such", "dir.bin"), []int32{1}); err == nil {
		t.Error("write into a missing folder succeeded")
	}
}
