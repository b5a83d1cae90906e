package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
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
	if raw[0] == '{' && json.Valid(raw) {
		return decodeValid(raw)
	}
	// Not JSON, or not an object: the decoder below says what and where.
	return decodeStream(raw)
}

// decodeStream is decodeArgs through encoding/json's token stream: it
// reads any input, and names the first error in it and where it is.
func decodeStream(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("arguments: must be a JSON object")
	}
	m, err := decodeObject(dec, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("arguments: unexpected data after the object")
	}
	return m, nil
}

// argError is an error in the arguments. Its path (".a[2].b") is spelled
// out on the way up, only for an error: a call's arguments decode without
// a string made per key.
type argError struct {
	path string
	err  error
}

func (e *argError) Error() string { return "arguments" + e.path + ": " + e.err.Error() }
func (e *argError) Unwrap() error { return e.err }

// argErr is an error at the value being decoded.
func argErr(format string, a ...any) error { return &argError{err: fmt.Errorf(format, a...)} }

// under puts err, from a value inside, below seg (".key" or "[i]").
func under(seg string, err error) error {
	var ae *argError
	if errors.As(err, &ae) {
		ae.path = seg + ae.path
		return ae
	}
	return &argError{path: seg, err: err}
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, argErr("nested deeper than %d levels", maxArgsDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, argErr("%w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return decodeObject(dec, depth+1)
		case '[':
			list := []any{}
			for i := 0; dec.More(); i++ {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, under("["+strconv.Itoa(i)+"]", err)
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, argErr("%w", err)
			}
			return list, nil
		}
		return nil, argErr("unexpected %q", t)
	case json.Number:
		if !exactNumber(t) {
			f, _ := t.Float64()
			return nil, argErr("the number %s cannot be checked against the tool's schema: it is not exactly a 64-bit float (the check would see %s); send it as a string or with fewer digits", t, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return t, nil
	default:
		return t, nil
	}
}

// exactNumber reports whether a JSON number is what the schema check (on
// float64) sees: exactly a float64, or the shortest decimal of one (0.1).
// Otherwise the check would pass a value (10.0000000000000001 as 10) that
// is not the one forwarded, byte for byte, to the server.
func exactNumber(n json.Number) bool {
	s := string(n)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	digits := 0
	for i := 0; i < len(s) && s[i] != 'e' && s[i] != 'E'; i++ {
		if c := s[i]; c >= '0' && c <= '9' && (digits > 0 || c != '0') {
			digits++
		}
	}
	if digits <= 15 {
		// Any decimal of up to 15 significant digits reads back as the
		// shortest decimal of its float64.
		return true
	}
	want, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	if want.Cmp(new(big.Rat).SetFloat64(f)) == 0 {
		return true
	}
	short, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return want.Cmp(short) == 0
}

func decodeObject(dec *json.Decoder, depth int) (map[string]any, error) {
	m := map[string]any{}
	var folded map[string]string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, argErr("%w", err)
		}
		k, ok := tok.(string)
		if !ok {
			return nil, argErr("object key is not a string")
		}
		if err := newKey(m, &folded, k); err != nil {
			return nil, err
		}
		v, err := decodeValue(dec, depth)
		if err != nil {
			return nil, under("."+k, err)
		}
		m[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, argErr("%w", err)
	}
	return m, nil
}

// newKey refuses a key an object already holds, or one that differs from
// one it holds only in case; folded maps each key's lower case to the key,
// made with the second key (most arguments are objects of one).
func newKey(m map[string]any, folded *map[string]string, k string) error {
	if _, dup := m[k]; dup {
		return argErr("duplicate key %q", k)
	}
	if len(m) == 0 {
		return nil
	}
	if *folded == nil {
		*folded = make(map[string]string, len(m)+1)
		for held := range m {
			(*folded)[strings.ToLower(held)] = held
		}
	}
	fk := strings.ToLower(k)
	if other, clash := (*folded)[fk]; clash {
		return argErr("keys %q and %q differ only in case", other, k)
	}
	(*folded)[fk] = k
	return nil
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
