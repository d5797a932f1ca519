// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FixturesDir returns the fixtures directory: $VKGRAD_FIXTURES when set, else
// ../shared/fixtures beside the module root, else the copy the module carries in
// testdata/fixtures (the parts the tests read; compressed files unpacked once into a cache).
// It fails the test, saying where it looked, when none is there: fixtures are required, never
// silently skipped.
func FixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("VKGRAD_FIXTURES"); d != "" {
		return mustDir(t, d)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(filepath.Dir(root), "shared", "fixtures")
	if st, err := os.Stat(shared); err == nil && st.IsDir() {
		return shared
	}
	d, err := CarriedFixtures(root)
	if err != nil {
		t.Fatalf("fixtures: neither %s nor the carried copy: %v (set VKGRAD_FIXTURES to override)", shared, err)
	}
	return d
}

func mustDir(t testing.TB, d string) string {
	t.Helper()
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		t.Fatalf("fixtures directory %s not found (set VKGRAD_FIXTURES to override)", d)
	}
	return d
}

// CarriedFixtures returns the module's own copy of the fixtures, root/testdata/fixtures, as a
// directory of plain files: its .gz files unpacked into a cache directory named by their
// content, made once and shared by every test process.
func CarriedFixtures(root string) (string, error) {
	src := filepath.Join(root, "testdata", "fixtures")
	sum, err := treeDigest(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(os.TempDir(), "vkgrad-fixtures-"+sum)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "vkgrad-fixtures-*")
	if err != nil {
		return "", err
	}
	if err := unpackTree(src, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.RemoveAll(tmp) // another process made it first
		if _, serr := os.Stat(dst); serr != nil {
			return "", err
		}
	}
	return dst, nil
}

// treeDigest is a hash of the files under dir: their paths and contents.
func treeDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// unpackTree copies the files under src into dst, gunzipping those named *.gz.
func unpackTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out = strings.TrimSuffix(out, ".gz")
		}
		return os.WriteFile(out, b, 0o644)
	})
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
