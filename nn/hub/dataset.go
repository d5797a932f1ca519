package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ConvertedRevision is the branch where the Hub keeps its Parquet export of a dataset whose
// own files are in no format it reads directly.
const ConvertedRevision = "refs/convert/parquet"

// DefaultConfig is the name of the configuration made of the files outside any config folder.
const DefaultConfig = "default"

// DatasetFiles are the local files of one split of a Hub dataset.
type DatasetFiles struct {
	// Config and Split are those chosen (Config settled when the dataset has only one).
	Config, Split string
	// Revision is the revision the files were read at: the one asked for, or
	// ConvertedRevision when the dataset's own files are in no known format.
	Revision string
	// Commit is the commit Revision named, which reads the same files again.
	Commit string
	// Files are the split's files in the snapshot, in order.
	Files []string
}

// dataExtensions are the file formats a split may be read from.
var dataExtensions = []string{".parquet", ".jsonl", ".json"}

// metadataFiles are JSON files a dataset repository holds beside its data.
var metadataFiles = map[string]bool{"dataset_info.json": true, "dataset_infos.json": true, "dataset_dict.json": true, "state.json": true}

// splitSynonyms map the words the datasets library recognises in file names to the split.
var splitSynonyms = map[string]string{
	"train": "train", "training": "train",
	"validation": "validation", "valid": "validation", "dev": "validation", "val": "validation",
	"test": "test", "testing": "test", "eval": "test", "evaluation": "test",
}

// shardPattern is how push_to_hub names the shards of a split: SPLIT-00000-of-00002.EXT.
var shardPattern = regexp.MustCompile(`^(.+)-(\d{5})-of-(\d{5})\.`)

// ResolveDataset returns the files of the split of Hub dataset name (ORG/NAME) in config ("":
// the dataset's only one, or DefaultConfig) at opts.Revision, downloading those the cache
// lacks; offline, or with the Hub out of reach, it reads the cached snapshot.
func ResolveDataset(ctx context.Context, name, config, split string, opts Options) (*DatasetFiles, error) {
	if !IsRepoID(name) {
		return nil, fmt.Errorf("%s: not a Hugging Face dataset name ORG/NAME", name)
	}
	if split == "" {
		return nil, fmt.Errorf("dataset %s: no split named", name)
	}
	o := opts.settle()
	if !commitPattern.MatchString(o.Revision) && !safeRelPath(o.Revision) {
		return nil, fmt.Errorf("revision %q is not a branch, tag or commit name", o.Revision)
	}
	r := newRepo(name, true, o)
	if o.Offline {
		d, err := r.cachedDataset(config, split)
		if err != nil {
			return nil, fmt.Errorf("dataset %s (revision %s) is not usable from the Hugging Face cache %s and HF_HUB_OFFLINE is set: %w", name, o.Revision, o.CacheDir, err)
		}
		return d, nil
	}
	d, err := r.downloadDataset(ctx, config, split)
	if errors.Is(err, errUnreachable) {
		if cached, cerr := r.cachedDataset(config, split); cerr == nil {
			return cached, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s (revision %s): %w", name, o.Revision, err)
	}
	return d, nil
}

// downloadDataset lists the revision's files, chooses the split's (from the converted Parquet
// branch when the revision has it in no format read), and fetches those the cache lacks.
func (r *repo) downloadDataset(ctx context.Context, config, split string) (*DatasetFiles, error) {
	info, err := r.modelInfo(ctx)
	if err != nil {
		return nil, err
	}
	src := r
	d, err := r.chooseListed(ctx, info, config, split)
	if err != nil {
		return nil, err
	}
	if len(d.Files) == 0 {
		conv := r.converted()
		converted, err := conv.modelInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("no data files (%s) at commit %s, and the Parquet conversion: %w", formatList(dataExtensions), info.SHA, err)
		}
		if d, err = conv.chooseListed(ctx, converted, d.Config, split); err != nil {
			return nil, err
		}
		if len(d.Files) == 0 {
			return nil, fmt.Errorf("no data files (%s) at commit %s, nor in its Parquet conversion at commit %s", formatList(dataExtensions), info.SHA, converted.SHA)
		}
		src, info = conv, converted
	}
	if err := src.fetchAll(ctx, info.SHA, d.Files, src.opts.Progress); err != nil {
		return nil, err
	}
	if err := src.writeRef(info.SHA); err != nil {
		return nil, err
	}
	return src.settleDataset(d, info.SHA), nil
}

// chooseListed chooses the split among the files the API lists at a commit, by the configs
// of the dataset card when it declares them; the card is fetched into the cache first, which
// keeps it for offline use.
func (r *repo) chooseListed(ctx context.Context, info *modelInfo, config, split string) (*DatasetFiles, error) {
	names := siblingNames(info)
	var card []byte
	if slices.Contains(names, cardFile) {
		if err := r.fetchAll(ctx, info.SHA, []string{cardFile}, nil); err != nil {
			return nil, err
		}
		var err error
		if card, err = os.ReadFile(filepath.Join(r.snapshot(info.SHA), cardFile)); err != nil {
			return nil, err
		}
	}
	return chooseFiles(card, names, config, split, "at commit "+info.SHA)
}

// cachedDataset chooses the split among the files of the revision's cached snapshot, else of
// the cached Parquet conversion, and checks no shard of it is missing.
func (r *repo) cachedDataset(config, split string) (*DatasetFiles, error) {
	commit, err := r.commit()
	var d *DatasetFiles
	if err == nil {
		d, err = r.chooseCached(commit, config, split)
	}
	if err == nil && len(d.Files) > 0 {
		return r.completeDataset(d, commit)
	}
	conv := r.converted()
	if c, cerr := conv.commit(); cerr == nil {
		convConfig := config
		if d != nil {
			convConfig = d.Config
		}
		if cd, cerr := conv.chooseCached(c, convConfig, split); cerr == nil && len(cd.Files) > 0 {
			return conv.completeDataset(cd, c)
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no data files (%s) in the cached snapshot %s, nor a cached Parquet conversion", formatList(dataExtensions), commit)
}

// chooseCached chooses the split among the files of a commit's cached snapshot, by the cached
// dataset card's configs when it declares them.
func (r *repo) chooseCached(commit, config, split string) (*DatasetFiles, error) {
	snap := r.snapshot(commit)
	names, err := snapshotFiles(snap)
	if err != nil {
		return nil, err
	}
	var card []byte
	if slices.Contains(names, cardFile) {
		if card, err = os.ReadFile(filepath.Join(snap, cardFile)); err != nil {
			return nil, err
		}
	}
	return chooseFiles(card, names, config, split, "in the cached snapshot "+commit)
}

// completeDataset refuses a cached split missing one of its shards, else settles it.
func (r *repo) completeDataset(d *DatasetFiles, commit string) (*DatasetFiles, error) {
	if err := completeShards(d.Files); err != nil {
		return nil, fmt.Errorf("the cached snapshot %s: %w", commit, err)
	}
	return r.settleDataset(d, commit), nil
}

// converted is the repository at the Hub's Parquet export branch.
func (r *repo) converted() *repo {
	conv := *r
	conv.opts.Revision = ConvertedRevision
	return &conv
}

// chooseFiles picks the split's files among names, the files of a commit: by the configs of
// card (the dataset card's text, nil if none) when it declares them, else by the files'
// names. A result without files means the commit has the split in no format read; its Config
// is then the one to look for in the Parquet conversion.
func chooseFiles(card []byte, names []string, config, split, where string) (*DatasetFiles, error) {
	configs, err := parseCardConfigs(card)
	if err != nil {
		return nil, fmt.Errorf("the dataset card %s %s: %w", cardFile, where, err)
	}
	if configs != nil {
		return chooseCardSplit(configs, config, split, names, where)
	}
	files := dataFiles(names)
	if len(files) == 0 {
		return &DatasetFiles{Config: config, Split: split}, nil
	}
	return chooseSplit(files, config, split, where)
}

// settleDataset names the chosen files by their place in the commit's snapshot.
func (r *repo) settleDataset(d *DatasetFiles, commit string) *DatasetFiles {
	d.Revision, d.Commit = r.opts.Revision, commit
	for i, f := range d.Files {
		d.Files[i] = filepath.Join(r.snapshot(commit), filepath.FromSlash(f))
	}
	return d
}

func siblingNames(info *modelInfo) []string {
	names := make([]string, 0, len(info.Siblings))
	for _, s := range info.Siblings {
		names = append(names, s.Name)
	}
	return names
}

// snapshotFiles lists the files of a snapshot directory, slash-separated and relative to it.
func snapshotFiles(snap string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !exists(p) {
			return nil
		}
		rel, err := filepath.Rel(snap, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the cache has no snapshot %s", filepath.Base(snap))
	}
	return names, err
}

// dataFiles keeps the files in a format a split is read from, leaving out hidden files and
// the library's metadata.
func dataFiles(names []string) []string {
	var out []string
	for _, n := range names {
		base := path.Base(n)
		if !safeRelPath(n) || strings.HasPrefix(base, ".") || metadataFiles[base] || !slices.Contains(dataExtensions, path.Ext(base)) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// configOf is the configuration a data file belongs to: the top folder it is in, or
// DefaultConfig for files at the top or under data/; rel is its path within the configuration.
func configOf(name string) (config, rel string) {
	top, rest, ok := strings.Cut(name, "/")
	if !ok || top == "data" || top == DefaultConfig {
		if ok {
			return DefaultConfig, rest
		}
		return DefaultConfig, name
	}
	return top, rest
}

// splitOf is the split a file within a configuration belongs to, "" when its path names none:
// the folder it is in (the Parquet conversion's "partial-" prefix dropped), a shard's name
// before -NNNNN-of-NNNNN, or a split word delimited in the file name, as the datasets library
// reads them.
func splitOf(rel string) string {
	if dir, _, ok := strings.Cut(rel, "/"); ok {
		dir = strings.TrimPrefix(dir, "partial-")
		if s, known := splitSynonyms[dir]; known {
			return s
		}
		return dir
	}
	if m := shardPattern.FindStringSubmatch(rel); m != nil {
		return m[1]
	}
	words := strings.FieldsFunc(rel, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
	})
	for _, w := range words {
		if s, ok := splitSynonyms[strings.ToLower(w)]; ok {
			return s
		}
	}
	return ""
}

// chooseSplit picks the files of the split in the configuration, in order; where says where
// the files were listed, for the errors.
func chooseSplit(files []string, config, split, where string) (*DatasetFiles, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no data files (%s) %s", formatList(dataExtensions), where)
	}
	byConfig := map[string][]string{} // config → the files' paths within it
	full := map[[2]string]string{}    // (config, path within it) → path in the repository
	for _, f := range files {
		c, rel := configOf(f)
		byConfig[c] = append(byConfig[c], rel)
		full[[2]string{c, rel}] = f
	}
	configs := sortedKeys(byConfig)
	switch {
	case config != "":
	case len(configs) == 1:
		config = configs[0]
	case byConfig[DefaultConfig] != nil:
		config = DefaultConfig
	default:
		return nil, fmt.Errorf("the dataset has configs %s %s: name one", strings.Join(configs, ", "), where)
	}
	rels, ok := byConfig[config]
	if !ok {
		return nil, fmt.Errorf("no config %q %s; the configs are %s", config, where, strings.Join(configs, ", "))
	}
	bySplit := groupBySplit(rels, func(rel string) string { return full[[2]string{config, rel}] })
	out, ok := bySplit[split]
	if !ok {
		return nil, fmt.Errorf("config %s has no split %q %s; its splits are %s", config, split, where, strings.Join(sortedKeys(bySplit), ", "))
	}
	sort.Strings(out)
	return &DatasetFiles{Config: config, Split: split, Files: out}, nil
}

// groupBySplit groups files, given by their path within a configuration, by the split their
// names say, naming each by full(rel); files naming no split are all train when none does.
func groupBySplit(rels []string, full func(rel string) string) map[string][]string {
	bySplit := map[string][]string{}
	for _, rel := range rels {
		s := splitOf(rel)
		bySplit[s] = append(bySplit[s], full(rel))
	}
	if unnamed := bySplit[""]; unnamed != nil {
		delete(bySplit, "")
		if len(bySplit) == 0 {
			bySplit["train"] = unnamed
		}
	}
	return bySplit
}

// completeShards refuses a split whose SPLIT-NNNNN-of-NNNNN shards are not all there.
func completeShards(files []string) error {
	type group struct{ dir, split, total string }
	have := map[group]int{}
	for _, f := range files {
		if m := shardPattern.FindStringSubmatch(filepath.Base(f)); m != nil {
			have[group{filepath.Dir(f), m[1], m[3]}]++
		}
	}
	for g, n := range have {
		if total := strings.TrimLeft(g.total, "0"); fmt.Sprint(n) != total {
			return fmt.Errorf("holds %d of the %s shards of %s", n, total, g.split)
		}
	}
	return nil
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func formatList(exts []string) string { return strings.Join(exts, ", ") }
