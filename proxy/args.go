package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxArgsDepth bounds nesting in tool arguments.
const maxArgsDepth = 64

// decodeArgs decodes tool arguments strictly: the top level must be an object
// (or absent), and no object may hold a key twice or two keys that differ
// only in case. Two JSON parsers that disagree on such input (first key wins
// here, last key wins there) would let an argument slip past validation, so
// the decoded value is what gets validated and re-encoded for the upstream.
// Numbers stay json.Number so they re-encode exactly.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("arguments: must be a JSON object")
	}
	m, err := decodeObject(dec, "arguments", 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments: unexpected data after the object")
	}
	return m, nil
}

func decodeValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d levels", path, maxArgsDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return decodeObject(dec, path, depth+1)
		case '[':
			list := []any{}
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return list, nil
		}
		return nil, fmt.Errorf("%s: unexpected %q", path, t)
	default:
		return t, nil
	}
}

func decodeObject(dec *json.Decoder, path string, depth int) (map[string]any, error) {
	m := map[string]any{}
	var folded map[string]string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		k, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: object key is not a string", path)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s: duplicate key %q", path, k)
		}
		if folded == nil {
			folded = map[string]string{}
		}
		fk := strings.ToLower(k)
		if other, clash := folded[fk]; clash {
			return nil, fmt.Errorf("%s: keys %q and %q differ only in case", path, other, k)
		}
		folded[fk] = k
		v, err := decodeValue(dec, path+"."+k, depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// forValidation converts json.Number values to float64, the form JSON Schema
// validators expect, copying only the containers that hold numbers.
func forValidation(v any) any {
	out, _ := convertNumbers(v)
	return out
}

// convertNumbers returns v with its numbers as float64 and whether it had to
// change anything; unchanged containers are returned as they are.
func convertNumbers(v any) (any, bool) {
	switch t := v.(type) {
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f, true
		}
		return t, false
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			c, changed := convertNumbers(e)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(t))
				for k2, e2 := range t {
					out[k2] = e2
				}
			}
			out[k] = c
		}
		if out == nil {
			return t, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range t {
			c, changed := convertNumbers(e)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), t...)
			}
			out[i] = c
		}
		if out == nil {
			return t, false
		}
		return out, true
	}
	return v, false
}
