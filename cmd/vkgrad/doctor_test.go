package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkgrad/vkgrad/internal/doctor"
)

// doctorEnv points every cache doctor walks at empty folders of the test, so it reads nothing of
// the machine's, and returns the Hugging Face cache folder.
func doctorEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hf := filepath.Join(dir, "hf")
	t.Setenv("HF_HUB_CACHE", hf)
	t.Setenv("HF_HOME", filepath.Join(dir, "hfhome"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("VKGRAD_CACHE_DIR", "")
	t.Setenv("HF_TOKEN", "")
	return hf
}

func runDoctorJSON(t *testing.T) map[string][]doctor.Check {
	t.Helper()
	out, err := runCLI("doctor", "--json")
	if err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	var r map[string][]doctor.Check
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json is not one JSON object: %v\n%s", err, out)
	}
	return r
}

func findCheck(t *testing.T, r map[string][]doctor.Check, section, name string) doctor.Check {
	t.Helper()
	for _, c := range r[section] {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("section %q has no check %q: %+v", section, name, r[section])
	return doctor.Check{}
}

func TestDoctorPrintsEverySection(t *testing.T) {
	doctorEnv(t)
	out, err := runCLI("doctor")
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	lines := strings.Split(out, "\n")
	for _, heading := range []string{"build", "cpu", "vulkan", "mpi", "hugging face", "vkgrad caches", "memory", "disk"} {
		found := false
		for _, l := range lines {
			found = found || l == heading
		}
		if !found {
			t.Errorf("no %q heading in:\n%s", heading, out)
		}
	}
	for _, l := range lines {
		if l == "" || !strings.HasPrefix(l, "  ") || strings.HasPrefix(strings.TrimSpace(l), "->") {
			continue
		}
		if status := strings.Fields(l[2+14:])[0]; status != doctor.StatusOK && status != doctor.StatusMissing && status != doctor.StatusWarning {
			t.Errorf("line without a status in its column: %q", l)
		}
	}
}

func TestDoctorJSONHasEverySection(t *testing.T) {
	doctorEnv(t)
	r := runDoctorJSON(t)
	for _, key := range []string{"build", "cpu", "vulkan", "mpi", "hugging_face", "vkgrad_caches", "memory", "disk"} {
		if len(r[key]) == 0 {
			t.Errorf("section %q missing or empty", key)
		}
		for _, c := range r[key] {
			if c.Status != doctor.StatusOK && c.Status != doctor.StatusMissing && c.Status != doctor.StatusWarning {
				t.Errorf("%s/%s: status %q", key, c.Name, c.Status)
			}
		}
	}
	if len(r) != 8 {
		t.Errorf("%d sections, want 8", len(r))
	}
	findCheck(t, r, "vulkan", "loader")
	findCheck(t, r, "vulkan", "--device auto")
	findCheck(t, r, "mpi", "library")
	if c := findCheck(t, r, "hugging_face", "cache"); c.Bytes != 0 || !strings.Contains(c.Detail, "not there yet") {
		t.Errorf("absent cache: %+v", c)
	}
}

func TestDoctorMeasuresTheHuggingFaceCache(t *testing.T) {
	hf := doctorEnv(t)
	blobs := filepath.Join(hf, "models--a--b", "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blobs, "x"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A snapshot links to its blob; the link must not count the blob twice.
	snap := filepath.Join(hf, "models--a--b", "snapshots", "main")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "blobs", "x"), filepath.Join(snap, "model.safetensors")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(hf, "datasets--c--d"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := findCheck(t, runDoctorJSON(t), "hugging_face", "cache")
	if c.Status != doctor.StatusOK || c.Bytes != 1000 || c.Count != 1 || c.Models != 1 || c.Datasets != 1 || c.Path != hf {
		t.Errorf("cache = %+v, want 1000 bytes in 1 file, 1 model, 1 dataset at %s", c, hf)
	}
	out, err := runCLI("doctor")
	if err != nil {
		t.Fatal(err)
	}
	if want := hf + ": 1000 B in 1 file(s), 1 model(s), 1 dataset(s)"; !strings.Contains(out, want) {
		t.Errorf("text report lacks %q:\n%s", want, out)
	}
}

func TestDoctorNeverPrintsTheToken(t *testing.T) {
	doctorEnv(t)
	t.Setenv("HF_TOKEN", "secret")
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		out, err := runCLI(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Contains(out, "secret") {
			t.Errorf("%v prints the token:\n%s", args, out)
		}
		if !strings.Contains(out, "from HF_TOKEN") {
			t.Errorf("%v does not say the token comes from HF_TOKEN:\n%s", args, out)
		}
	}
}

func TestDoctorFlags(t *testing.T) {
	doctorEnv(t)
	if _, err := runCLI("doctor", "extra"); err == nil || !strings.Contains(err.Error(), "no arguments") {
		t.Errorf("doctor extra: %v", err)
	}
	if _, err := runCLI("doctor", "--timeout", "0s"); err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("doctor --timeout 0s: %v", err)
	}
}
