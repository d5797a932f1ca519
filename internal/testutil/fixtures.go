// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// FixturesDir returns the shared fixtures directory: $VKGRAD_FIXTURES when set, else
// ../shared/fixtures beside the module root. It fails the test, saying where it looked, when
// the directory is missing: fixtures are required, never silently skipped.
func FixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("VKGRAD_FIXTURES"); d != "" {
		return mustDir(t, d)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return mustDir(t, filepath.Join(filepath.Dir(root), "shared", "fixtures"))
}

func mustDir(t testing.TB, d string) string {
	t.Helper()
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		t.Fatalf("fixtures directory %s not found (set VKGRAD_FIXTURES to override)", d)
	}
	return d
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
