package rlrun

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/vkgrad/vkgrad/rl"
)

func sampleEvalResult() *rl.EvalResult {
	t := rl.EvalTask{N: 4, Accuracy: 0.25, AccuracySE: 0.2165, MeanReward: 0.4, SampledAccuracy: 0.125}
	return &rl.EvalResult{EvalTask: t, ByTask: map[string]rl.EvalTask{"addition": t}}
}

// The second lookup of a key reads the figure the first measured, without measuring; the file
// is written with the umask's permissions.
func TestEvalCacheMeasuresOnce(t *testing.T) {
	var logs bytes.Buffer
	c := &EvalCache{Dir: t.TempDir(), Log: zerolog.New(&logs)}
	measured := 0
	measure := func() (*rl.EvalResult, error) { measured++; return sampleEvalResult(), nil }
	first, err := c.Get("k1", 4, measure)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Get("k1", 4, measure)
	if err != nil {
		t.Fatal(err)
	}
	if measured != 1 || !reflect.DeepEqual(first, second) {
		t.Fatalf("measured %d times; results %+v and %+v", measured, first, second)
	}
	if !strings.Contains(logs.String(), "from the cache") {
		t.Errorf("no log line says the figure came from the cache: %s", logs.String())
	}
	if _, err := c.Get("k2", 4, measure); err != nil || measured != 2 {
		t.Fatalf("another key: measured %d times, err %v; want a second measurement", measured, err)
	}
	st, err := os.Stat(filepath.Join(c.Dir, "k1.json"))
	if err != nil {
		t.Fatal(err)
	}
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	if want := os.FileMode(0o666 &^ mask); st.Mode().Perm() != want {
		t.Errorf("entry mode %v, want %v (0666 less the umask)", st.Mode().Perm(), want)
	}
}

// A damaged entry (cut short, edited without its checksum, under another key's name, or with
// impossible numbers) is measured again with a warning, and replaced.
func TestFaultEvalCacheCorruptEntryNotTrusted(t *testing.T) {
	good := sampleEvalResult()
	bad := sampleEvalResult()
	bad.Accuracy = 1.5
	damage := map[string]func(path string) error{
		"truncated": func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, b[:len(b)/2], 0o644)
		},
		"edited": func(p string) error {
			b, _ := os.ReadFile(p)
			return os.WriteFile(p, bytes.Replace(b, []byte(`"accuracy": 0.25`), []byte(`"accuracy": 0.75`), 1), 0o644)
		},
		"other key":  func(p string) error { return writeEvalEntry(p, "k9", good) },
		"impossible": func(p string) error { return writeEvalEntry(p, "k1", bad) },
		"not json":   func(p string) error { return os.WriteFile(p, []byte{0, 1, 2}, 0o644) },
	}
	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			c := &EvalCache{Dir: t.TempDir(), Log: zerolog.New(&logs)}
			measured := 0
			measure := func() (*rl.EvalResult, error) { measured++; return sampleEvalResult(), nil }
			if _, err := c.Get("k1", 4, measure); err != nil {
				t.Fatal(err)
			}
			if err := f(filepath.Join(c.Dir, "k1.json")); err != nil {
				t.Fatal(err)
			}
			got, err := c.Get("k1", 4, measure)
			if err != nil {
				t.Fatal(err)
			}
			if measured != 2 || !reflect.DeepEqual(got, good) || !strings.Contains(logs.String(), "ignoring the cached") {
				t.Fatalf("measured %d times, got %+v; log %s", measured, got, logs.String())
			}
			if _, err := readEvalEntry(filepath.Join(c.Dir, "k1.json"), "k1", 4); err != nil {
				t.Fatalf("the entry was not replaced by a good one: %v", err)
			}
		})
	}
	// A result on another number of problems is not this held-out set's.
	c := &EvalCache{Dir: t.TempDir(), Log: zerolog.Nop()}
	if err := writeEvalEntry(filepath.Join(c.Dir, "k1.json"), "k1", good); err != nil {
		t.Fatal(err)
	}
	if _, err := readEvalEntry(filepath.Join(c.Dir, "k1.json"), "k1", 5); err == nil {
		t.Fatal("a result on 4 problems was accepted for 5")
	}
}
