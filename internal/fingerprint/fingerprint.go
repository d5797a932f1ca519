// Package fingerprint identifies data files by content, so a later command can tell they changed.
package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// fingerprintFullBytes is the size up to which a data file is hashed whole; beyond it the
// first and last MiB and the size stand for it.
const fingerprintFullBytes = 256 << 20

// Data identifies training data by content, so that a command reading a run's data later
// (eval, a resumed run) can refuse data that changed: a file by its size and SHA-256 (of its
// first and last MiB past 256 MiB), a folder by the names and sizes of its files.
func Data(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if !st.IsDir() {
		if err := hashFile(h, path, st.Size()); err != nil {
			return "", err
		}
		return fmt.Sprintf("file %d bytes sha256:%s", st.Size(), hex.EncodeToString(h.Sum(nil))), nil
	}
	files, total := 0, int64(0)
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s\x00%d\n", filepath.ToSlash(rel), info.Size())
		files++
		total += info.Size()
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("folder %d files %d bytes sha256:%s", files, total, hex.EncodeToString(h.Sum(nil))), nil
}

// Files is Data of one file, or, for the shards of a split, a hash of each file's name and
// fingerprint in order.
func Files(paths []string) (string, error) {
	if len(paths) == 1 {
		return Data(paths[0])
	}
	h := sha256.New()
	for _, p := range paths {
		fp, err := Data(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\n", filepath.Base(p), fp)
	}
	return fmt.Sprintf("files %d sha256:%s", len(paths), hex.EncodeToString(h.Sum(nil))), nil
}

func hashFile(h io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if size <= fingerprintFullBytes {
		_, err = io.Copy(h, f)
		return err
	}
	if _, err := io.CopyN(h, f, 1<<20); err != nil {
		return err
	}
	if _, err := f.Seek(-1<<20, io.SeekEnd); err != nil {
		return err
	}
	_, err = io.Copy(h, f)
	return err
}
