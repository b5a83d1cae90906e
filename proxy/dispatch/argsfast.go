package dispatch

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// decodeValid is decodeArgs for arguments that are valid JSON with an
// object at the top: the same checks (duplicate and case-variant keys,
// depth, exact numbers) and the same value, read with a tokenizer that
// allocates only for what it keeps. A string holding an escape or a
// non-ASCII byte is unquoted by encoding/json itself, so what is
// validated and re-encoded is exactly what encoding/json would read
// (invalid UTF-8 and lone surrogates included).
func decodeValid(raw []byte) (map[string]any, error) {
	var t segjson.Tokenizer
	t.Reset(raw)
	defer t.Reset(nil) // returns the tokenizer's stack to its pool
	t.Next()           // the '{' the caller saw
	return objectTokens(&t, 1)
}

// objectTokens reads an object's members after its '{' up to its '}'.
func objectTokens(t *segjson.Tokenizer, depth int) (map[string]any, error) {
	m := map[string]any{}
	var folded map[string]string
	for t.Next() {
		switch t.Delim {
		case '}':
			return m, nil
		case ',':
			continue
		}
		k, err := stringToken(t)
		if err != nil {
			return nil, argErr("%w", err)
		}
		if err := newKey(m, &folded, k); err != nil {
			return nil, err
		}
		t.Next() // ':'
		t.Next()
		v, err := valueTokens(t, depth)
		if err != nil {
			return nil, under("."+k, err)
		}
		m[k] = v
	}
	return nil, argErr("%v", t.Err)
}

// valueTokens reads the value whose first token t is on.
func valueTokens(t *segjson.Tokenizer, depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, argErr("nested deeper than %d levels", maxArgsDepth)
	}
	switch t.Delim {
	case '{':
		return objectTokens(t, depth+1)
	case '[':
		list := []any{}
		for i := 0; t.Next(); {
			switch t.Delim {
			case ']':
				return list, nil
			case ',':
				continue
			}
			v, err := valueTokens(t, depth+1)
			if err != nil {
				return nil, under("["+strconv.Itoa(i)+"]", err)
			}
			list = append(list, v)
			i++
		}
		return nil, argErr("%v", t.Err)
	}
	switch t.Kind().Class() {
	case segjson.Null:
		return nil, nil
	case segjson.Bool:
		return t.Kind() == segjson.True, nil
	case segjson.Num:
		n := json.Number(t.Value)
		if !exactNumber(n) {
			f, _ := n.Float64()
			return nil, argErr("the number %s cannot be checked against the tool's schema: it is not exactly a 64-bit float (the check would see %s); send it as a string or with fewer digits", n, strconv.FormatFloat(f, 'g', -1, 64))
		}
		return n, nil
	}
	return stringToken(t)
}

// stringToken is the string t is on, unquoted as encoding/json does.
func stringToken(t *segjson.Tokenizer) (string, error) {
	v := t.Value
	plain := len(v) >= 2
	for i := 1; plain && i < len(v)-1; i++ {
		plain = v[i] != '\\' && v[i] < utf8.RuneSelf
	}
	if plain {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}
