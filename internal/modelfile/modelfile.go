// Package modelfile reads the small JSON files of a model directory with a bound on their size.
//
// [Read] returns a file such as config.json or tokenizer.json only if it is a regular file under
// its limit ([Config], [Tokenizer], ...); [Check] applies the same test to a file already
// opened. A hostile or broken directory, whose config.json is a link to /dev/zero, a named pipe
// or a file of gigabytes, is refused by name instead of exhausting memory or blocking.
package modelfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Limits on each kind of file, far above what a real one holds and far below what would strain
// memory (a decoded JSON file takes a few times its size).
const (
	// Config bounds config.json and generation_config.json: real ones are 1-10 KiB, and those
	// carrying label tables stay well under 1 MiB.
	Config = 4 << 20
	// Index bounds model.safetensors.index.json, about 100 bytes per tensor: 64 MiB lists over
	// half a million tensors, several times the largest published checkpoints.
	Index = 64 << 20
	// Tokenizer bounds tokenizer.json: Qwen's is 11 MiB, Llama 3's 9 MiB and Gemma 3's, with
	// 262k tokens, 33 MiB; 256 MiB leaves room for vocabularies several times larger.
	Tokenizer = 256 << 20
	// TokenizerConfig bounds tokenizer_config.json and special_tokens_map.json, whose bulk is
	// added_tokens_decoder at about 150 bytes a token: listing all 262k tokens of the largest
	// vocabulary would take 40 MiB.
	TokenizerConfig = 64 << 20
)

// Read returns the contents of the regular file at path (links followed), refusing other kinds
// of file and files over limit bytes. Errors name path.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := Check(path, st, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have been replaced since the Stat, or may grow: check what was opened, and
	// never read past the limit.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := Check(path, st, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while being read", path, limit)
	}
	return b, nil
}

// Check refuses a file that is not a regular file (st describes path, links followed) or holds
// more than limit bytes (no limit when limit < 0).
func Check(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file", path, kind(st.Mode()))
	}
	if limit >= 0 && st.Size() > limit {
		return fmt.Errorf("%s has %d bytes, more than the %d such a file can hold", path, st.Size(), limit)
	}
	return nil
}

// kind names a file's type for errors.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
