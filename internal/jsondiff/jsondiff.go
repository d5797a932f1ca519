// Package jsondiff names the first field where two values differ once written as JSON.
//
// A resumed run says with it which setting of its checkpoint it does not match.
package jsondiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// First names the first field (by JSON path, in sorted order) where a, the checkpoint's, and
// b, the current value, differ, skipping the paths in skip; "" when they agree. what names the
// values in the message.
func First(what string, a, b any, skip map[string]bool) string {
	fa, fb := map[string]any{}, map[string]any{}
	flatten("", normalize(a), fa)
	flatten("", normalize(b), fb)
	union := maps.Clone(fa)
	maps.Copy(union, fb)
	for _, k := range slices.Sorted(maps.Keys(union)) {
		if skip[k] {
			continue
		}
		va, oka := fa[k]
		vb, okb := fb[k]
		if oka && okb && reflect.DeepEqual(va, vb) {
			continue
		}
		return fmt.Sprintf("%s field %s is %s in the checkpoint but %s here", what, k, show(va, oka), show(vb, okb))
	}
	return ""
}

// normalize is v as encoding/json decodes its encoding (maps, slices, float64s), so values of
// different Go types that write the same JSON compare equal; v itself when it does not encode.
func normalize(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return v
	}
	return out
}

// show is a field's JSON, or "absent".
func show(v any, ok bool) string {
	if !ok {
		return "absent"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// flatten records each leaf of v under its dotted path.
func flatten(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		for k, x := range m {
			flatten(strings.TrimPrefix(prefix+"."+k, "."), x, out)
		}
		return
	}
	out[prefix] = v
}
