// Package hubtest fakes the Hugging Face cache and Hub for tests that resolve Hub names.
//
// It fills a cache with model and dataset files, and serves dataset repositories as the Hub does.
//
// [Store] and [StoreDataset] lay files out exactly as huggingface_hub does: blobs named by
// [ETag], a snapshot of symlinks under a [Commit] hash, and a ref naming it. [ReadDir] reads a
// model directory's files to store. [NewHub] starts a fake Hub serving datasets.
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

// LFS reports whether the Hub stores a file through LFS: weights and Parquet data; everything
// else is a plain git file.
func LFS(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".parquet")
}

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
	return store(filepath.Join(cache, "models--"+strings.ReplaceAll(repoID, "/", "--")), revision, files)
}

// StoreDataset is Store for dataset repoID, whose folder is datasets--ORG--NAME; file names
// may hold folders (main/train-00000-of-00001.parquet) and revision slashes
// (refs/convert/parquet).
func StoreDataset(cache, repoID, revision string, files map[string][]byte) (string, error) {
	return store(filepath.Join(cache, "datasets--"+strings.ReplaceAll(repoID, "/", "--")), revision, files)
}

func store(repo, revision string, files map[string][]byte) (string, error) {
	commit := Commit(files)
	snap := filepath.Join(repo, "snapshots", commit)
	ref := filepath.Join(repo, "refs", filepath.FromSlash(revision))
	for _, dir := range []string{filepath.Join(repo, "blobs"), snap, filepath.Dir(ref)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	for name, b := range files {
		etag := ETag(name, b)
		if err := os.WriteFile(filepath.Join(repo, "blobs", etag), b, 0o644); err != nil {
			return "", err
		}
		pointer := filepath.Join(snap, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
			return "", err
		}
		target, err := filepath.Rel(filepath.Dir(pointer), filepath.Join(repo, "blobs", etag))
		if err != nil {
			return "", err
		}
		if err := os.Symlink(target, pointer); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(ref, []byte(commit), 0o644); err != nil {
		return "", err
	}
	return snap, nil
}
