package plot

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzScanFlat: whatever the direct scan of a metrics line accepts, encoding/json reads as the
// same object, name for name and value for value.
func FuzzScanFlat(f *testing.F) {
	for _, s := range []string{
		`{"kind":"train","step":2,"loss":9.5,"lr":0.001}`, `{"step":1e308,"kl":"NaN","x":null,"y":true}`,
		` { } `, `{"step":-0.5e-3 , "a":false}`, `{"step":01}`, `{"a":1,"a":2}`, `{"a":"\u0041"}`,
		`{"a":{"b":1}}`, `{"a":[1]}`, `{"step":4,"lo`, `{"a":1,}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`,
		`{"a":truex}`, `{"é":1}`, `null`, `{"a":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fs, ok := scanFlat(line, nil)
		if !ok {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("scanned %q, which encoding/json refuses: %v", line, err)
		}
		if len(obj) != len(fs) {
			t.Fatalf("%q: %d fields scanned, encoding/json has %d", line, len(fs), len(obj))
		}
		for _, f := range fs {
			if v, ok := obj[string(f.key)]; !ok || !bytes.Equal(v, f.val) {
				t.Fatalf("%q: field %q scanned as %q, encoding/json has %q", line, f.key, f.val, v)
			}
		}
	})
}

func TestFieldsFallsBackToEncodingJSON(t *testing.T) {
	fs, ok := fields([]byte(`{"st\u0065p":3,"nested":{"a":1}}`), nil)
	if !ok || len(fs) != 2 {
		t.Fatalf("fields = %q, %v; want both fields through encoding/json", fs, ok)
	}
	for _, bad := range []string{`{"step":4,"lo`, `[1,2]`, `null`, `{"a":01}`, ``} {
		if _, ok := fields([]byte(bad), nil); ok {
			t.Errorf("%q read as an object", bad)
		}
	}
}
