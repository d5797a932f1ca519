// Package hubtest fills a Hugging Face cache with model files, for tests that resolve model names.
//
// [Store] lays a model's files out exactly as huggingface_hub does: blobs named by [ETag],
// a snapshot of symlinks under a [Commit] hash, and a ref naming it. [ReadDir] reads a model
// directory's files to store.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LFS reports whether the Hub stores a file through LFS: its weights; everything else is a
// plain git file.
func LFS(name string) bool { return strings.HasSuffix(name, ".safetensors") }

// ETag is the hash the Hub names a file by: sha256 for LFS files, the git blob SHA-1 otherwise.
func ETag(name string, b []byte) string {
	if LFS(name) {
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Commit is a stable made-up commit hash for a set of files.
func Commit(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha1.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s %s\n", n, ETag(n, files[n]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadDir reads the regular files of a model directory.
func ReadDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = b
	}
	return files, nil
}

// Store writes files into cache as model repoID at revision: blobs/<hash>, snapshots/<commit>/
// with relative symlinks to the blobs, and refs/<revision> holding the commit. It returns the
// snapshot directory.
func Store(cache, repoID, revision string, files map[string][]byte) (string, error) {
	repo := filepath.Join(cache, "models--"+strings.ReplaceAll(repoID, "/", "--"))
	commit := Commit(files)
	snap := filepath.Join(repo, "snapshots", commit)
	for _, dir := range []string{filepath.Join(repo, "blobs"), snap, filepath.Join(repo, "refs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	for name, b := range files {
		etag := ETag(name, b)
		if err := os.WriteFile(filepath.Join(repo, "blobs", etag), b, 0o644); err != nil {
			return "", err
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", etag), filepath.Join(snap, name)); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", revision), []byte(commit), 0o644); err != nil {
		return "", err
	}
	return snap, nil
}
