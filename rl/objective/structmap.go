package objective

import (
	"reflect"
	"strings"
)

// structMap returns the float64 fields of a diagnostics struct keyed by their JSON names.
func structMap(v any) map[string]float64 {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	m := make(map[string]float64, rt.NumField())
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || f.Type.Kind() != reflect.Float64 {
			continue
		}
		m[name] = rv.Field(i).Float()
	}
	return m
}
