// Package atomicfile writes files whole or not at all, so a crash never leaves a torn file.
//
// [Write] and [WriteFile] write into a temporary file beside the target, sync it, rename it over
// the target and sync the directory: after a crash the old file or the new one is there. Where
// only the directory sync fails, the error wraps [ErrDirNotSynced].
//
// The temporary file is created with the caller's permissions less the umask, as
// [os.WriteFile] does ([os.CreateTemp]'s fixed 0600, widened by a chmod, would ignore the
// umask), and its name carries a mark no other program uses ([TempPattern]), so
// [RemoveStale], cleaning up after a crash, removes vkgrad's own temporaries and never a
// user's file.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// ErrDirNotSynced is in the error of a write that put the new file in place but could not sync
// its directory: the file is whole, but a crash may still bring the old one back.
var ErrDirNotSynced = errors.New("could not sync the directory")

// mark is in the name of every temporary file: ".<name>.vkgrad-tmp-<random>".
const mark = ".vkgrad-tmp-"

// TempPattern is the glob (for filepath.Glob) of the temporary files of a file called name.
func TempPattern(name string) string { return "." + name + mark + "*" }

// RemoveStale deletes the temporary files that an interrupted write of dir/name, for each of
// names, left behind. Only call it while no other process can be writing those files.
func RemoveStale(dir string, names ...string) {
	for _, name := range names {
		matches, _ := filepath.Glob(filepath.Join(dir, TempPattern(name)))
		for _, m := range matches {
			os.Remove(m)
		}
	}
}

// WriteFile writes b to path atomically, with the permissions perm less the umask.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Write writes path atomically through write, with the permissions perm less the umask. On
// an error path is untouched and the temporary file gone.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := create(dir, filepath.Base(path), perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir, path)
}

// create makes a new temporary file for name in dir, as os.CreateTemp does but with perm.
func create(dir, name string, perm fs.FileMode) (*os.File, error) {
	for range 100 {
		p := filepath.Join(dir, "."+name+mark+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("creating a temporary file for %s in %s: every name tried exists", name, dir)
}

// syncDir makes the rename durable: it is on disk only once the directory entry is. Windows
// cannot sync a directory handle; its rename is already as durable as it gets.
func syncDir(dir, path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		return fmt.Errorf("wrote %s but %w: %w", path, ErrDirNotSynced, err)
	}
	return nil
}
