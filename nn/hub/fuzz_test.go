package hub

import (
	"strings"
	"testing"
)

// FuzzShardNames: an index names shards inside the model or is refused, never a path outside.
func FuzzShardNames(f *testing.F) {
	f.Add([]byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../../../etc/passwd"}}`))
	f.Add([]byte(`{"weight_map":{"a":"/abs"}}`))
	f.Add([]byte(`{"weight_map":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		names, err := shardNames(b, "index")
		if err != nil {
			return
		}
		for _, n := range names {
			if strings.HasPrefix(n, "/") || strings.Contains(n, "..") && strings.Contains("/"+n+"/", "/../") {
				t.Fatalf("shard %q leaves the snapshot", n)
			}
		}
	})
}

// FuzzCardConfigs: any card parses or is refused, never panics; the configs it yields have
// distinct names, at most one default, and only valid patterns.
func FuzzCardConfigs(f *testing.F) {
	f.Add([]byte(gsmCard))
	f.Add([]byte("---\nconfigs:\n- data_files:\n  - split: train\n    path: [a/*.jsonl, b/**/c.json]\n---\n"))
	f.Add([]byte("---\nconfigs:\n- config_name: x\n  data_files: {train: &p t.jsonl, test: *p}\n---\n"))
	f.Fuzz(func(t *testing.T, card []byte) {
		configs, err := parseCardConfigs(card)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range configs {
			if c.name == "" || seen[c.name] {
				t.Fatalf("config name %q empty or repeated in %+v", c.name, configs)
			}
			seen[c.name] = true
			for split, pats := range c.splits {
				for _, p := range pats {
					if p == "" || split == "" {
						t.Fatalf("split %q has pattern %q", split, p)
					}
					matchGlob(p, "a/b/c.jsonl")
				}
			}
		}
		if d := defaultConfigs(configs); len(d) > 1 {
			t.Fatalf("several defaults %v", d)
		}
	})
}
