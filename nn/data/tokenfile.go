package data

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/vkgrad/vkgrad/internal/atomicfile"
)

// llm.c token file layout: a header of 256 little-endian int32 [magic, version, ntok, 0...],
// then ntok uint16 tokens. Version 2, written only when a token does not fit 16 bits (the
// vocabularies of Llama 3 and Qwen), stores uint32 tokens; llm.c reads version 1 only.
const (
	TokenFileMagic    = 20240520
	TokenFileVersion  = 1
	tokenFileVersion2 = 2
	headerInts        = 256
	headerBytes       = headerInts * 4
)

// ReadTokenFile reads an llm.c token file.
func ReadTokenFile(path string) ([]int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("token file %s: is a directory", path)
	}
	size := st.Size()
	if size < headerBytes {
		return nil, fmt.Errorf("token file %s: %d bytes is shorter than the %d-byte header", path, size, headerBytes)
	}
	var hdr [headerBytes]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, fmt.Errorf("token file %s: reading header: %w", path, err)
	}
	magic := int32(binary.LittleEndian.Uint32(hdr[0:]))
	version := int32(binary.LittleEndian.Uint32(hdr[4:]))
	ntok := int64(int32(binary.LittleEndian.Uint32(hdr[8:])))
	switch {
	case magic != TokenFileMagic:
		return nil, fmt.Errorf("token file %s: magic %d, want %d (not an llm.c token file)", path, magic, TokenFileMagic)
	case version != TokenFileVersion && version != tokenFileVersion2:
		return nil, fmt.Errorf("token file %s: version %d, want %d (or %d for 32-bit tokens)", path, version, TokenFileVersion, tokenFileVersion2)
	case ntok < 0:
		return nil, fmt.Errorf("token file %s: negative token count %d in header", path, ntok)
	}
	width := int64(2)
	if version == tokenFileVersion2 {
		width = 4
	}
	want := headerBytes + width*ntok
	if size < want {
		return nil, fmt.Errorf("token file %s: truncated: header says %d tokens (%d bytes) but the file has %d bytes", path, ntok, want, size)
	}
	if size > want {
		return nil, fmt.Errorf("token file %s: %d trailing bytes after the %d tokens the header declares", path, size-want, ntok)
	}
	raw := make([]byte, width*ntok)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, fmt.Errorf("token file %s: reading tokens: %w", path, err)
	}
	out := make([]int32, ntok)
	for i := range out {
		if width == 2 {
			out[i] = int32(binary.LittleEndian.Uint16(raw[2*i:]))
			continue
		}
		v := binary.LittleEndian.Uint32(raw[4*i:])
		if v > math.MaxInt32 {
			return nil, fmt.Errorf("token file %s: token %d at position %d is out of range", path, v, i)
		}
		out[i] = int32(v)
	}
	return out, nil
}

// WriteTokenFile writes tokens as an llm.c token file (version 2, 32-bit tokens, when one does
// not fit 16 bits), with the permissions 0666 less the umask. It writes a temporary file beside
// path and renames it, so a crash never leaves a half-written file under path.
func WriteTokenFile(path string, tokens []int32) error {
	return writeTokenFile(path, tokens, 0o666)
}

// writeTokenFile is WriteTokenFile with the permissions perm (less the umask).
func writeTokenFile(path string, tokens []int32, perm fs.FileMode) error {
	if int64(len(tokens)) > math.MaxInt32 {
		return fmt.Errorf("token file %s: %d tokens exceed the format's limit of %d", path, len(tokens), math.MaxInt32)
	}
	version := TokenFileVersion
	for i, t := range tokens {
		if t < 0 {
			return fmt.Errorf("token file %s: token %d at position %d is negative", path, t, i)
		}
		if t > math.MaxUint16 {
			version = tokenFileVersion2
		}
	}
	err := atomicfile.Write(path, perm, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<16)
		var hdr [headerBytes]byte
		binary.LittleEndian.PutUint32(hdr[0:], TokenFileMagic)
		binary.LittleEndian.PutUint32(hdr[4:], uint32(version))
		binary.LittleEndian.PutUint32(hdr[8:], uint32(len(tokens)))
		w.Write(hdr[:])
		var b [4]byte
		for _, t := range tokens {
			if version == TokenFileVersion {
				binary.LittleEndian.PutUint16(b[:], uint16(t))
				w.Write(b[:2])
				continue
			}
			binary.LittleEndian.PutUint32(b[:], uint32(t))
			w.Write(b[:])
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("token file %s: %w", path, err)
	}
	return nil
}
