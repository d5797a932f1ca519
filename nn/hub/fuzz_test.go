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
