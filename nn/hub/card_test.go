package hub

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

// gsmCard declares GSM8K's two configs as its card does: main, the default, with a list of
// {split, path}, and socratic with one pattern.
const gsmCard = `---
license: mit
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-*
  - split: test
    path: main/test-*
  default: true
- config_name: socratic
  data_files: socratic/train-*.parquet
---
# GSM tiny
`

// gsmCardFiles are laid out so that guessing from the names would read other files than the
// card declares: a top folder extra/ (a config of its own to the guess) and a socratic test
// file the card leaves out.
func gsmCardFiles() map[string][]byte {
	return map[string][]byte{
		"README.md":                             []byte(gsmCard),
		"main/train-00000-of-00002.parquet":     []byte("PAR1 main train 0"),
		"main/train-00001-of-00002.parquet":     []byte("PAR1 main train 1"),
		"main/test-00000-of-00001.parquet":      []byte("PAR1 main test"),
		"socratic/train-00000-of-00001.parquet": []byte("PAR1 socratic train"),
		"socratic/test-00000-of-00001.parquet":  []byte("PAR1 socratic test"),
		"extra/train.jsonl":                     []byte("{}\n"),
	}
}

// The configs of a card's front matter are read in each form data_files takes.
func TestParseCardConfigs(t *testing.T) {
	for _, c := range []struct {
		name, card string
		want       []cardConfig
	}{
		{"named configs and a default", gsmCard, []cardConfig{
			{name: "main", isDefault: true, splits: map[string][]string{"train": {"main/train-*"}, "test": {"main/test-*"}}},
			{name: "socratic", splits: map[string][]string{"train": {"socratic/train-*.parquet"}}},
		}},
		{"an unnamed single config, a list of paths", "---\nconfigs:\n- data_files:\n  - split: train\n    path:\n    - data/a.jsonl\n    - \"./data/b.jsonl\"\n---\n",
			[]cardConfig{{name: "default", splits: map[string][]string{"train": {"data/a.jsonl", "data/b.jsonl"}}}}},
		{"a list of patterns, all train", "---\nconfigs:\n- config_name: default\n  data_files: [a/*.parquet, b/**/*.parquet]\n---\n",
			[]cardConfig{{name: "default", splits: map[string][]string{"train": {"a/*.parquet", "b/**/*.parquet"}}}}},
		{"a map from split to patterns", "\n---\r\nconfigs:\r\n- config_name: x\r\n  data_files:\r\n    train: t.jsonl\r\n    test: [u.jsonl, v.jsonl]\r\n---\r\n",
			[]cardConfig{{name: "x", splits: map[string][]string{"train": {"t.jsonl"}, "test": {"u.jsonl", "v.jsonl"}}}}},
		{"a data_dir without data_files", "---\nconfigs:\n- config_name: en\n  data_dir: en/\n- config_name: fr\n  data_dir: fr\n---\n",
			[]cardConfig{{name: "en", dataDir: "en"}, {name: "fr", dataDir: "fr"}}},
		{"no configs key", "---\nlicense: mit\ndataset_info:\n  configs: not this one\n---\n", nil},
		{"no front matter", "# configs:\n- config_name: x\n", nil},
		{"front matter never closed", "---\nconfigs:\n- config_name: x\n", nil},
		{"duplicate keys elsewhere", "---\ntags: [a]\ntags: [b]\nconfigs:\n- config_name: x\n  data_files: x.jsonl\n---\n",
			[]cardConfig{{name: "x", splits: map[string][]string{"train": {"x.jsonl"}}}}},
	} {
		got, err := parseCardConfigs([]byte(c.card))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

// A card whose configs are malformed is refused naming the line and what is wrong.
func TestFaultParseCardConfigs(t *testing.T) {
	for _, c := range []struct{ card, want string }{
		{"---\nconfigs: main\n---\n", "line 2: configs is not a list of configs"},
		{"---\nlicense: mit\nconfigs:\n- data_files: a.jsonl\n- data_files: b.jsonl\n---\n", "line 4: configs[0] has no config_name, which each of several configs needs"},
		{"---\nconfigs:\n- config_name: a\n- config_name: a\n---\n", `line 4: configs[1]: config_name "a" is declared twice`},
		{"---\nconfigs:\n- config_name: a\n  default: true\n- config_name: b\n  default: true\n---\n", "configs a, b are each marked default: true"},
		{"---\nconfigs:\n- config_name: a\n  data_files:\n  - split: train\n---\n", "line 3: config a: data_files: split train: want a path or a list of paths"},
		{"---\nconfigs:\n- config_name: a\n  data_files:\n  - path: x.jsonl\n---\n", "line 3: config a: data_files: entry 0 is neither a path nor a {split, path}"},
		{"---\nconfigs:\n- config_name: a\n  data_files: \"data/[x.jsonl\"\n---\n", `line 3: config a: data_files: split train: "data/[x.jsonl" is not a valid glob pattern`},
		{"---\nconfigs:\n- config_name: a\n  default: maybe\n---\n", "line 3: configs[0]: yaml: unmarshal errors"},
		{"---\nconfigs: [\n---\n", "the YAML front matter: yaml: line 2"},
	} {
		_, err := parseCardConfigs([]byte(c.card))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.card, err, c.want)
		}
	}
}

// Patterns match within one folder, except a ** segment, which spans any number of them.
func TestMatchGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"main/train-*", "main/train-00000-of-00002.parquet", true},
		{"main/train-*", "main/sub/train-0.parquet", false},
		{"*.jsonl", "a.jsonl", true},
		{"*.jsonl", "data/a.jsonl", false},
		{"data/**/*.jsonl", "data/a.jsonl", true},
		{"data/**/*.jsonl", "data/x/y/a.jsonl", true},
		{"data/**", "data/x/a.parquet", true},
		{"**/test-*", "test-0.parquet", true},
		{"data/?.json", "data/ab.json", false},
		{"train.csv", "train.csv", true},
		{"**/**/a/**/**", "x/a", true},
		{"**/**/b/**/**", "x/a", false},
		{strings.Repeat("**/", 200) + "z", strings.Repeat("a/", 50) + "y", false},
	} {
		if got := matchGlob(c.pattern, c.name); got != c.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// The card's configs choose the files: its default config without --dataset-config, a config
// given by one pattern, each downloaded with the card alone; an absent config or split lists
// what the card declares.
func TestDatasetCardConfigs(t *testing.T) {
	h := newDatasetHub(t)
	commit := h.AddDataset(gsmID, "main", gsmCardFiles())
	cache := t.TempDir()
	for _, c := range []struct {
		config, split, wantConfig string
		want                      []string
	}{
		{"", "train", "main", []string{"main/train-00000-of-00002.parquet", "main/train-00001-of-00002.parquet"}},
		{"", "test", "main", []string{"main/test-00000-of-00001.parquet"}},
		{"socratic", "train", "socratic", []string{"socratic/train-00000-of-00001.parquet"}},
	} {
		d, err := ResolveDataset(context.Background(), gsmID, c.config, c.split, hubOpts(h, cache))
		if err != nil {
			t.Fatalf("config %q split %s: %v", c.config, c.split, err)
		}
		if got := relFiles(t, d); !reflect.DeepEqual(got, c.want) || d.Config != c.wantConfig || d.Commit != commit {
			t.Errorf("config %q split %s: %+v (%v), want %v of config %s", c.config, c.split, d, got, c.want, c.wantConfig)
		}
	}
	want := []string{"README.md", "main/train-00000-of-00002.parquet", "main/train-00001-of-00002.parquet",
		"main/test-00000-of-00001.parquet", "socratic/train-00000-of-00001.parquet"}
	if got := h.Downloads(); !reflect.DeepEqual(got, want) {
		t.Errorf("downloaded %v, want %v", got, want)
	}
	for _, c := range []struct{ config, split, want string }{
		{"extra", "train", `dataset org/gsm-tiny (revision main): no config "extra" in the dataset card (README.md) at commit ` + commit +
			"; its configs are main (splits test, train), socratic (splits train)"},
		{"socratic", "test", `dataset org/gsm-tiny (revision main): config socratic has no split "test" at commit ` + commit + "; its splits are train"},
	} {
		_, err := ResolveDataset(context.Background(), gsmID, c.config, c.split, hubOpts(h, cache))
		if err == nil || err.Error() != c.want {
			t.Errorf("config %q split %s: %v, want %q", c.config, c.split, err, c.want)
		}
	}
}

// A single unnamed config is "default"; its splits come from lists of paths and a map, and a
// pattern that matches no file is named.
func TestDatasetCardUnnamedConfig(t *testing.T) {
	h := newDatasetHub(t)
	files := map[string][]byte{
		"README.md": []byte("---\nconfigs:\n- data_files:\n  - split: train\n    path: [data/a.jsonl, data/b.jsonl]\n" +
			"  - split: validation\n    path: holdout.jsonl\n  - split: test\n    path: missing/*.jsonl\n---\n"),
		"data/a.jsonl":   []byte("{}\n"),
		"data/b.jsonl":   []byte("{}\n"),
		"data/c.jsonl":   []byte("{}\n"),
		"holdout.jsonl":  []byte("{}\n"),
		".hidden.jsonl":  []byte("{}\n"),
		"data/test.json": []byte("[]"),
	}
	commit := h.AddDataset(gsmID, "main", files)
	cache := t.TempDir()
	for split, want := range map[string][]string{"train": {"data/a.jsonl", "data/b.jsonl"}, "validation": {"holdout.jsonl"}} {
		d, err := ResolveDataset(context.Background(), gsmID, "", split, hubOpts(h, cache))
		if err != nil {
			t.Fatal(err)
		}
		if got := relFiles(t, d); !reflect.DeepEqual(got, want) || d.Config != DefaultConfig {
			t.Errorf("split %s: %+v (%v), want %v of config default", split, d, got, want)
		}
	}
	_, err := ResolveDataset(context.Background(), gsmID, "", "test", hubOpts(h, cache))
	if want := "config default, split test: no file matches missing/*.jsonl at commit " + commit; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a pattern matching nothing: %v, want %q", err, want)
	}
}

// Offline, the cached card chooses among the cached files: a split whose file name says
// nothing (so that guessing would call it train) is found by the card's name for it, and a
// config whose files were never fetched is not in the cache.
func TestDatasetCardOffline(t *testing.T) {
	h := newDatasetHub(t)
	files := map[string][]byte{
		"README.md": []byte("---\nconfigs:\n- config_name: qa\n  default: true\n  data_files:\n    train: qa/questions.jsonl\n    test: qa/holdout.jsonl\n" +
			"- config_name: other\n  data_files: other/*.jsonl\n---\n"),
		"qa/questions.jsonl": []byte(`{"prompt": "1+1", "answer": "2"}` + "\n"),
		"qa/holdout.jsonl":   []byte(`{"prompt": "2+2", "answer": "4"}` + "\n"),
		"other/x.jsonl":      []byte("{}\n"),
	}
	commit := h.AddDataset(gsmID, "main", files)
	cache := t.TempDir()
	online, err := ResolveDataset(context.Background(), gsmID, "", "test", hubOpts(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	d, err := ResolveDataset(context.Background(), gsmID, "", "test", Options{CacheDir: cache})
	if err != nil || !reflect.DeepEqual(d, online) || !reflect.DeepEqual(relFiles(t, d), []string{"qa/holdout.jsonl"}) || d.Config != "qa" {
		t.Fatalf("offline: %+v, %v; want %+v", d, err, online)
	}
	_, err = ResolveDataset(context.Background(), gsmID, "other", "train", Options{CacheDir: cache})
	if want := "config other, split train: no file matches other/*.jsonl in the cached snapshot " + commit; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("offline, a config never fetched: %v, want %q", err, want)
	}
	_, err = ResolveDataset(context.Background(), gsmID, "absent", "train", Options{CacheDir: cache})
	if want := `no config "absent" in the dataset card (README.md) in the cached snapshot ` + commit + "; its configs are qa (splits test, train), other (splits train)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("offline, an absent config: %v, want %q", err, want)
	}
}

// A card whose config's files are in no format read (CSV) has the config read from the
// Parquet conversion, which the card's default picks among the conversion's configs.
func TestDatasetCardConfigFromTheParquetConversion(t *testing.T) {
	h := newDatasetHub(t)
	h.AddDataset(gsmID, "main", map[string][]byte{
		"README.md": []byte("---\nconfigs:\n- config_name: small\n  data_files: small.csv\n- config_name: big\n  data_files: big.csv\n  default: true\n---\n"),
		"small.csv": []byte("q,a\n"),
		"big.csv":   []byte("q,a\n"),
	})
	commit := h.AddDataset(gsmID, ConvertedRevision, map[string][]byte{
		"small/train/0000.parquet": []byte("PAR1 small"),
		"big/train/0000.parquet":   []byte("PAR1 big"),
	})
	d, err := ResolveDataset(context.Background(), gsmID, "", "train", hubOpts(h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if got := relFiles(t, d); !reflect.DeepEqual(got, []string{"big/train/0000.parquet"}) || d.Config != "big" || d.Commit != commit || d.Revision != ConvertedRevision {
		t.Errorf("resolved %+v (%v), want config big's train split at %s", d, got, commit)
	}
}

// A dataset's download draws the progress bar models use, over the split's bytes (34: the two
// train shards, not the card).
func TestDatasetDownloadProgress(t *testing.T) {
	h := newDatasetHub(t)
	h.AddDataset(gsmID, "main", gsmCardFiles())
	var bar bytes.Buffer
	o := hubOpts(h, t.TempDir())
	o.Progress = &bar
	if _, err := ResolveDataset(context.Background(), gsmID, "", "train", o); err != nil {
		t.Fatal(err)
	}
	if want := "34/34 (100%) | 34 B of 34 B | main/train-00001-of-00002.parquet |"; !strings.Contains(bar.String(), want) || !strings.Contains(bar.String(), "ETA") {
		t.Errorf("progress %q, want a line with %q and an ETA", bar.String(), want)
	}
}
