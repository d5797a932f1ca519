package hub

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// cardFile is the dataset card, whose YAML front matter may declare the configs and the files
// of their splits.
const cardFile = "README.md"

// cardConfig is one entry of the configs list of a dataset card.
type cardConfig struct {
	name      string
	isDefault bool
	// dataDir is the folder the patterns are relative to ("": the repository's top).
	dataDir string
	// splits maps each split to its glob patterns; nil when the card names no data files, so
	// the splits are read from the names of the files under dataDir.
	splits map[string][]string
}

// yamlConfig is an entry of configs as written in the card.
type yamlConfig struct {
	Name      string    `yaml:"config_name"`
	Default   bool      `yaml:"default"`
	DataDir   string    `yaml:"data_dir"`
	DataFiles yaml.Node `yaml:"data_files"`
}

// frontMatter returns the YAML between a leading "---" line and the next "---" line, the
// lines before it left blank so that YAML line numbers are the card's; ok is false when the
// card opens with no such block.
func frontMatter(card []byte) (yml []byte, ok bool) {
	card = bytes.TrimPrefix(card, []byte("\ufeff"))
	lines := strings.SplitAfter(string(card), "\n")
	start := 0
	for start < len(lines) && strings.TrimSpace(lines[start]) == "" {
		start++
	}
	if start == len(lines) || strings.TrimRight(lines[start], " \t\r\n") != "---" {
		return nil, false
	}
	for end := start + 1; end < len(lines); end++ {
		if strings.TrimRight(lines[end], " \t\r\n") == "---" {
			return []byte(strings.Repeat("\n", start+1) + strings.Join(lines[start+1:end], "")), true
		}
	}
	return nil, false
}

// parseCardConfigs reads the configs a dataset card declares: none when the card has no front
// matter or no configs key. Only that key is decoded into values, so metadata elsewhere that
// PyYAML accepts and a strict decoder refuses (a repeated key) does not stop a dataset from
// loading; front matter that is not YAML at all does.
func parseCardConfigs(card []byte) ([]cardConfig, error) {
	yml, ok := frontMatter(card)
	if !ok {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(yml, &doc); err != nil {
		return nil, fmt.Errorf("the YAML front matter: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	top := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "configs" {
			list = resolveAlias(top.Content[i+1])
		}
	}
	if list == nil {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: configs is not a list of configs", list.Line)
	}
	var configs []cardConfig
	seen := map[string]bool{}
	for i, item := range list.Content {
		var y yamlConfig
		if err := item.Decode(&y); err != nil {
			return nil, fmt.Errorf("line %d: configs[%d]: %w", item.Line, i, err)
		}
		c := cardConfig{name: y.Name, isDefault: y.Default, dataDir: strings.Trim(y.DataDir, "/")}
		if c.name == "" {
			if len(list.Content) > 1 {
				return nil, fmt.Errorf("line %d: configs[%d] has no config_name, which each of several configs needs", item.Line, i)
			}
			c.name = DefaultConfig
		}
		if seen[c.name] {
			return nil, fmt.Errorf("line %d: configs[%d]: config_name %q is declared twice", item.Line, i, c.name)
		}
		seen[c.name] = true
		var err error
		if c.splits, err = parseDataFiles(&y.DataFiles); err != nil {
			return nil, fmt.Errorf("line %d: config %s: data_files: %w", item.Line, c.name, err)
		}
		configs = append(configs, c)
	}
	if defaults := defaultConfigs(configs); len(defaults) > 1 {
		return nil, fmt.Errorf("configs %s are each marked default: true", strings.Join(defaults, ", "))
	}
	return configs, nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// parseDataFiles reads a config's data_files: one pattern or a list of them (all train), a
// list of {split, path} where path is a pattern or a list, or a map from split to patterns.
func parseDataFiles(n *yaml.Node) (map[string][]string, error) {
	n = resolveAlias(n)
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	splits := map[string][]string{}
	add := func(split string, p *yaml.Node) error {
		pats, err := parsePatterns(p)
		if err != nil {
			return fmt.Errorf("split %s: %w", split, err)
		}
		splits[split] = append(splits[split], pats...)
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return splits, add("train", n)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := add(n.Content[i].Value, n.Content[i+1]); err != nil {
				return nil, err
			}
		}
		return splits, nil
	case yaml.SequenceNode:
		for i, item := range n.Content {
			item = resolveAlias(item)
			if item.Kind == yaml.ScalarNode {
				if err := add("train", item); err != nil {
					return nil, err
				}
				continue
			}
			var entry struct {
				Split string    `yaml:"split"`
				Path  yaml.Node `yaml:"path"`
			}
			if item.Kind != yaml.MappingNode || item.Decode(&entry) != nil || entry.Split == "" {
				return nil, fmt.Errorf("entry %d is neither a path nor a {split, path}", i)
			}
			if err := add(entry.Split, &entry.Path); err != nil {
				return nil, err
			}
		}
		return splits, nil
	}
	return nil, fmt.Errorf("want a path, a list of paths or a list of {split, path}")
}

// parsePatterns reads a path pattern or a list of them, refusing a malformed glob.
func parsePatterns(n *yaml.Node) ([]string, error) {
	n = resolveAlias(n)
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var pats []string
	for _, item := range items {
		item = resolveAlias(item)
		if item.Kind != yaml.ScalarNode || item.Tag == "!!null" || item.Value == "" {
			return nil, fmt.Errorf("want a path or a list of paths")
		}
		p := path.Clean(item.Value)
		for seg := range strings.SplitSeq(p, "/") {
			if _, err := path.Match(seg, ""); err != nil {
				return nil, fmt.Errorf("%q is not a valid glob pattern", item.Value)
			}
		}
		pats = append(pats, p)
	}
	return pats, nil
}

// defaultConfigs names the configs marked default: true.
func defaultConfigs(configs []cardConfig) []string {
	var names []string
	for _, c := range configs {
		if c.isDefault {
			names = append(names, c.name)
		}
	}
	return names
}

// chooseCardConfig picks the config named, or else the one marked default, the only one, or
// the one named "default".
func chooseCardConfig(configs []cardConfig, name string, names []string, where string) (cardConfig, error) {
	if name == "" {
		if d := defaultConfigs(configs); len(d) == 1 {
			name = d[0]
		} else if len(configs) == 1 {
			name = configs[0].name
		} else {
			name = DefaultConfig
			if !slices.ContainsFunc(configs, func(c cardConfig) bool { return c.name == DefaultConfig }) {
				return cardConfig{}, fmt.Errorf("the dataset card (%s) declares configs %s %s, none marked default: name one", cardFile, strings.Join(configNames(configs), ", "), where)
			}
		}
	}
	for _, c := range configs {
		if c.name == name {
			return c, nil
		}
	}
	listed := make([]string, len(configs))
	for i, c := range configs {
		listed[i] = fmt.Sprintf("%s (splits %s)", c.name, strings.Join(c.splitNames(names), ", "))
	}
	return cardConfig{}, fmt.Errorf("no config %q in the dataset card (%s) %s; its configs are %s", name, cardFile, where, strings.Join(listed, ", "))
}

func configNames(configs []cardConfig) []string {
	names := make([]string, len(configs))
	for i, c := range configs {
		names[i] = c.name
	}
	return names
}

// splitNames lists the config's splits, sorted: those the card declares, else those the names
// of its files say.
func (c cardConfig) splitNames(names []string) []string {
	if c.splits != nil {
		return sortedKeys(c.splits)
	}
	return sortedKeys(c.guessedSplits(names))
}

// guessedSplits groups the data files under dataDir by the split their names say.
func (c cardConfig) guessedSplits(names []string) map[string][]string {
	var rels []string
	for _, f := range dataFiles(names) {
		if rel, ok := c.relative(f); ok {
			rels = append(rels, rel)
		}
	}
	return groupBySplit(rels, func(rel string) string { return path.Join(c.dataDir, rel) })
}

// relative is name's path within dataDir; ok is false when name lies outside it.
func (c cardConfig) relative(name string) (string, bool) {
	if c.dataDir == "" {
		return name, true
	}
	return strings.CutPrefix(name, c.dataDir+"/")
}

// splitFiles returns the repository files of the config's split, sorted; each pattern must
// match at least one of names.
func (c cardConfig) splitFiles(split string, names []string, where string) ([]string, error) {
	if c.splits == nil {
		bySplit := c.guessedSplits(names)
		files, ok := bySplit[split]
		if !ok {
			return nil, fmt.Errorf("config %s has no split %q %s; its splits are %s", c.name, split, where, strings.Join(sortedKeys(bySplit), ", "))
		}
		sort.Strings(files)
		return files, nil
	}
	pats, ok := c.splits[split]
	if !ok {
		return nil, fmt.Errorf("config %s has no split %q %s; its splits are %s", c.name, split, where, strings.Join(sortedKeys(c.splits), ", "))
	}
	var files []string
	seen := map[string]bool{}
	for _, p := range pats {
		p = path.Join(c.dataDir, p)
		matched := false
		for _, name := range names {
			if hiddenPath(name) || !matchGlob(p, name) {
				continue
			}
			matched = true
			if !seen[name] {
				seen[name] = true
				files = append(files, name)
			}
		}
		if !matched {
			return nil, fmt.Errorf("config %s, split %s: no file matches %s %s", c.name, split, p, where)
		}
	}
	sort.Strings(files)
	return files, nil
}

// hiddenPath reports whether a file or one of its folders is hidden (starts with a dot), as
// the datasets library leaves such files out of a pattern's matches.
func hiddenPath(name string) bool {
	for seg := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// matchGlob reports whether the slash-separated name matches pattern, whose *, ? and [...]
// stay within one path segment and whose "**" segment spans any number of them. It fills a
// table of which pattern tails match which name tails, so a card with many "**" cannot make
// it take exponential time.
func matchGlob(pattern, name string) bool {
	pat, segs := strings.Split(pattern, "/"), strings.Split(name, "/")
	// tail[j] says whether the pattern from the segment being considered on matches segs[j:].
	tail := make([]bool, len(segs)+1)
	tail[len(segs)] = true // the empty pattern matches only the empty name
	next := make([]bool, len(segs)+1)
	for i := len(pat) - 1; i >= 0; i-- {
		for j := len(segs); j >= 0; j-- {
			switch {
			case pat[i] == "**":
				next[j] = tail[j] || j < len(segs) && next[j+1]
			case j == len(segs):
				next[j] = false
			default:
				ok, err := path.Match(pat[i], segs[j])
				next[j] = err == nil && ok && tail[j+1]
			}
		}
		tail, next = next, tail
	}
	return tail[0]
}

// chooseCardSplit picks the files of the split of config ("": the card's default) from the
// card's configs, keeping those in a format read; no files means the split is in no such
// format.
func chooseCardSplit(configs []cardConfig, config, split string, names []string, where string) (*DatasetFiles, error) {
	c, err := chooseCardConfig(configs, config, names, where)
	if err != nil {
		return nil, err
	}
	files, err := c.splitFiles(split, names, where)
	if err != nil {
		return nil, err
	}
	return &DatasetFiles{Config: c.name, Split: split, Files: dataFiles(files)}, nil
}
