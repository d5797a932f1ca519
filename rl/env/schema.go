package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// schema is the subset of JSON Schema that tool arguments are checked against: types
// (string, number, integer, boolean, object, array, null), an object's properties and
// required members, an array's items. Other keywords are accepted and not checked.
type schema struct {
	types      []string
	properties map[string]*schema
	required   []string
	items      *schema
}

// schemaJSON is a schema's JSON; "type" is a name or a list of names.
type schemaJSON struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Items      json.RawMessage            `json:"items"`
}

var schemaTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// maxSchemaDepth bounds nesting, so a hostile schema cannot exhaust the stack.
const maxSchemaDepth = 32

// parseSchema reads a JSON schema; path names it in errors.
func parseSchema(raw json.RawMessage, path string, depth int) (*schema, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d", path, maxSchemaDepth)
	}
	var j schemaJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%s: want a JSON schema object: %v", path, err)
	}
	s := &schema{required: j.Required}
	var err error
	if s.types, err = parseTypes(j.Type); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, p := range j.Properties {
		if s.properties == nil {
			s.properties = map[string]*schema{}
		}
		if s.properties[name], err = parseSchema(p, path+"."+name, depth+1); err != nil {
			return nil, err
		}
	}
	if len(j.Items) > 0 && string(j.Items) != "null" {
		if s.items, err = parseSchema(j.Items, path+"[]", depth+1); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parseTypes reads "type": missing (any type), a name, or a list of names.
func parseTypes(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var types []string
	if raw[0] == '"' {
		types = []string{""}
		if err := json.Unmarshal(raw, &types[0]); err != nil {
			return nil, err
		}
	} else if err := json.Unmarshal(raw, &types); err != nil {
		return nil, fmt.Errorf(`"type" is %s: want a type name or a list of them`, raw)
	}
	for _, t := range types {
		if !slices.Contains(schemaTypes, t) {
			return nil, fmt.Errorf("type %q: want one of %s", t, strings.Join(schemaTypes, ", "))
		}
	}
	return types, nil
}

// check reports the first way v (decoded with json.Number) breaks the schema; path names v.
func (s *schema) check(v any, path string) error {
	if len(s.types) > 0 && !slices.ContainsFunc(s.types, func(t string) bool { return hasType(v, t) }) {
		return fmt.Errorf("%s is %s, want %s", path, typeName(v), strings.Join(s.types, " or "))
	}
	switch v := v.(type) {
	case map[string]any:
		for _, r := range s.required {
			if _, ok := v[r]; !ok {
				return fmt.Errorf("%s: required %q is missing", path, r)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p := s.properties[k]; p != nil {
				if err := p.check(v[k], path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if s.items != nil {
			for i, e := range v {
				if err := s.items.check(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hasType reports whether v is of JSON Schema type t; an integer is a number whose
// fractional part is zero (1.0 included).
func hasType(v any, t string) bool {
	switch v := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case json.Number:
		if t == "number" {
			return true
		}
		return t == "integer" && isInteger(string(v))
	}
	return false
}

// isInteger reports whether the JSON number n has no fractional part. It reads the digits
// rather than converting, so that neither 1e999999999 nor 12345678901234567890.5 misleads it.
func isInteger(n string) bool {
	mant, exp, _ := strings.Cut(strings.ToLower(n), "e")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	digits := strings.TrimRight(whole+frac, "0")
	if strings.Trim(digits, "0") == "" {
		return true // zero
	}
	scale := len(digits) - len(whole) // decimal places after dropping trailing zeros
	if exp == "" {
		return scale <= 0
	}
	e, err := strconv.Atoi(exp)
	if err != nil { // beyond int: a huge positive exponent makes an integer, a negative one not
		return !strings.HasPrefix(exp, "-")
	}
	return scale <= e
}

// typeName names v's JSON type for errors.
func typeName(v any) string {
	for _, t := range []string{"integer", "number", "string", "boolean", "object", "array", "null"} {
		if hasType(v, t) {
			return t
		}
	}
	return fmt.Sprintf("%T", v)
}

// decodeArguments decodes a call's arguments object, numbers as json.Number so that large
// integers stay exact.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	if args == nil {
		return nil, errors.New("arguments: want a JSON object")
	}
	return args, nil
}
